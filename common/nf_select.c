/* nf_select.c — component selection to objects. */
#include "nf_select.h"

#include <stdlib.h>
#include <string.h>

static bool has_prefix(const char *name, const char *comp)
{
    size_t n = strlen(comp);
    return !strncmp(name, comp, n) && name[n] == '/';
}

bool nf_select_has(const nf_catalog *c, const bool *comps, const char *name)
{
    for (size_t i = 0; i < c->n_components; i++)
        if (comps[i] && (has_prefix(name, c->components[i].id) ||
                         (!strcmp(c->components[i].id, "text") && has_prefix(name, "proposal"))))
            return true;
    return false;
}

static void mark(const nf_binding *b, bool *objs)
{
    if (!b->parts) {
        if (b->obj != SIZE_MAX)
            objs[b->obj] = true;
        return;
    }
    for (size_t k = 0; k < b->n_parts; k++)
        if (b->parts[k].obj != SIZE_MAX)
            objs[b->parts[k].obj] = true;
}

int nf_select(const nf_catalog *c, const char *list, bool resources, bool *comps, bool *objs,
              nf_diags *d)
{
    memset(comps, 0, c->n_components * sizeof *comps);
    memset(objs, 0, c->n_objects * sizeof *objs);
    int rc = 0;
    if (!list) {
        bool text = false;
        for (size_t i = 0; i < c->n_components; i++)
            if (!strcmp(c->components[i].id, "text"))
                comps[i] = text = true;
        if (!text)
            for (size_t i = 0; i < c->n_components; i++)
                comps[i] = true;
    } else {
        char *copy = strdup(list), *save = NULL;
        if (!copy) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            bool found = false;
            for (size_t i = 0; i < c->n_components; i++)
                if (!strcmp(c->components[i].id, t))
                    comps[i] = found = true;
            if (!found) {
                nf_diag_add(d, NF_C_COMPONENT_MISSING, "/components",
                            "component \"%s\" was selected but the artifact does not provide it", t);
                rc = -1;
            }
        }
        free(copy);
    }
    /* targets, transitively (bounded: a target chain is at most as long as
     * the component list) */
    for (size_t pass = 0; pass < c->n_components; pass++)
        for (size_t i = 0; i < c->n_components; i++)
            if (comps[i] && c->components[i].target)
                for (size_t k = 0; k < c->n_components; k++)
                    if (!strcmp(c->components[k].id, c->components[i].target))
                        comps[k] = true;
    for (size_t b = 0; b < c->n_bindings; b++)
        if (c->bindings[b].name && nf_select_has(c, comps, c->bindings[b].name))
            mark(&c->bindings[b].b, objs);
    for (size_t u = 0; u < c->n_uses; u++)
        if (c->uses[u].parameter && nf_select_has(c, comps, c->uses[u].parameter))
            for (size_t k = 0; k < c->uses[u].n_aux; k++)
                mark(&c->uses[u].aux[k].b, objs);
    for (size_t i = 0; resources && i < c->n_components; i++)
        if (comps[i])
            for (size_t k = 0; k < c->components[i].n_resources; k++)
                if (c->components[i].resources[k].obj != SIZE_MAX)
                    objs[c->components[i].resources[k].obj] = true;
    return rc;
}
