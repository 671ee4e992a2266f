/* nf_select.c — component selection to objects. */
#include "nf_select.h"

#include <stdlib.h>
#include <string.h>

bool nf_select_has(const nf_catalog *c, const bool *comps, const char *name)
{
    size_t w = nf_catalog_owner(c, name);
    return w != SIZE_MAX && comps[w];
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
        size_t t = nf_catalog_component(c, "text");
        if (t != SIZE_MAX)
            comps[t] = text = true;
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
            size_t i = nf_catalog_component(c, t);
            if (i != SIZE_MAX)
                comps[i] = true;
            else {
                nf_diag_add(d, NF_C_COMPONENT_MISSING, "/components",
                            "component \"%s\" was selected but the artifact does not provide it", t);
                rc = -1;
            }
        }
        free(copy);
    }
    /* targets, transitively: each chain stops at a component selected
     * already, so every component is walked at most once */
    for (size_t i = 0; i < c->n_components; i++) {
        if (!comps[i])
            continue;
        for (size_t t = c->components[i].target_index; t < c->n_components && !comps[t];
             t = c->components[t].target_index)
            comps[t] = true;
    }
    /* owners were resolved when the catalog was read */
    for (size_t b = 0; b < c->n_bindings; b++) {
        size_t w = c->bindings[b].component;
        if (w < c->n_components && comps[w])
            mark(&c->bindings[b].b, objs);
    }
    for (size_t u = 0; u < c->n_uses; u++) {
        const nf_use *use = &c->uses[u];
        size_t w = use->binding < c->n_bindings ? c->bindings[use->binding].component
                                                : nf_catalog_owner(c, use->parameter);
        if (w < c->n_components && comps[w])
            for (size_t k = 0; k < use->n_aux; k++)
                mark(&use->aux[k].b, objs);
    }
    for (size_t i = 0; resources && i < c->n_components; i++)
        if (comps[i])
            for (size_t k = 0; k < c->components[i].n_resources; k++)
                if (c->components[i].resources[k].obj != SIZE_MAX)
                    objs[c->components[i].resources[k].obj] = true;
    return rc;
}
