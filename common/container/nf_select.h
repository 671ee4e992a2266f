/* nf_select.h — what a component selection needs (spec 4.2, 5.3, 11.1):
 * the selected components and their targets (selecting mtp loads text),
 * and the objects they reference — through bindings named "<component>/..."
 * (and "proposal/..." for text with a proposal, spec 9.2; nf_catalog_owner), the auxiliaries of those
 * parameters' uses, and, when asked, the components' resources. Every other
 * object stays unread, so a partial download can be checked and loaded.
 */
#ifndef NF_SELECT_H
#define NF_SELECT_H

#include <stdbool.h>
#include "nf_catalog.h"
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* list: comma-separated component IDs, or NULL for "text" (all components
 * when there is no text). comps[n_components] and objs[n_objects] are set
 * to the selection (caller-allocated, zeroed here). A listed component the
 * artifact lacks is `component-missing` (spec 12.6). Returns 0 or -1. */
int nf_select(const nf_catalog *c, const char *list, bool resources, bool *comps, bool *objs,
              nf_diags *d);

/* The components ids[0..n) and their targets, transitively (spec 4.2:
 * selecting mtp selects text), into comps[n_components] (caller-allocated,
 * zeroed here); n == 0 selects every component. An ID the artifact lacks is
 * `component-missing` (spec 12.6). Returns 0 or -1. The binder and nf_select
 * share it. */
int nf_select_components(const nf_catalog *c, const char *const *ids, size_t n, bool *comps,
                         nf_diags *d);

/* True when the parameter name belongs to a selected component: its owner
 * (nf_catalog_owner: the name's first segment; "proposal/" names are
 * text's when it has a proposal) is selected. O(1). */
bool nf_select_has(const nf_catalog *c, const bool *comps, const char *name);

#ifdef __cplusplus
}
#endif
#endif
