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

/* A selected component selects its target (spec 4.2: mtp loads text),
 * transitively: each chain stops at a component selected already, so every
 * component is walked at most once. */
static void add_targets(const nf_catalog *c, bool *comps)
{
    for (size_t i = 0; i < c->n_components; i++) {
        if (!comps[i])
            continue;
        for (size_t t = c->components[i].target_index; t < c->n_components && !comps[t];
             t = c->components[t].target_index)
            comps[t] = true;
    }
}

int nf_select_components(const nf_catalog *c, const char *const *ids, size_t n, bool *comps,
                         nf_diags *d)
{
    int rc = 0;
    memset(comps, 0, c->n_components * sizeof *comps);
    for (size_t i = 0; !n && i < c->n_components; i++)
        comps[i] = true;
    for (size_t k = 0; k < n; k++) {
        size_t i = nf_catalog_component(c, ids[k]);
        if (i != SIZE_MAX) {
            comps[i] = true;
        } else {
            nf_diag_add(d, NF_C_COMPONENT_MISSING, "/components",
                        "component \"%s\" was selected but the artifact does not provide it",
                        ids[k]);
            rc = -1;
        }
    }
    add_targets(c, comps);
    return rc;
}

int nf_select(const nf_catalog *c, const char *list, bool resources, bool *comps, bool *objs,
              nf_diags *d)
{
    memset(comps, 0, c->n_components * sizeof *comps);
    memset(objs, 0, c->n_objects * sizeof *objs);
    int rc = 0;
    if (!list) {
        /* the default: the main model, or everything when there is none */
        size_t t = nf_catalog_component(c, NF_TEXT_COMPONENT);
        if (t != SIZE_MAX)
            comps[t] = true;
        else
            for (size_t i = 0; i < c->n_components; i++)
                comps[i] = true;
        add_targets(c, comps);
    } else {
        size_t n = 1, k = 0;
        for (const char *p = list; *p; p++)
            n += *p == ',';
        char *copy = strdup(list), *save = NULL;
        const char **ids = calloc(n, sizeof *ids);
        if (!copy || !ids) {
            free(copy);
            free(ids);
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
            ids[k++] = t;
        /* a list of no IDs ("," or "") selects nothing, as before */
        rc = k ? nf_select_components(c, ids, k, comps, d) : 0;
        free(ids);
        free(copy);
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
