/* nf_quant.h — choosing encodings in a manifest (ninfer-quant(1)):
 * rules GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P] matched against
 * logical parameter names, applied to the objects the parameters are bound
 * to, and the activation policies (spec 8) of their uses.
 */
#ifndef NF_QUANT_H
#define NF_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_catalog.h"
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char *match;             /* fnmatch(3) glob without FNM_PATHNAME: '*' crosses '/' */
    char *format, *layout;   /* layout NULL: the one the format allows */
    uint64_t divisors;       /* 0: leave as is (1 for a newly chosen format) */
    char *policy;            /* NULL, "A16Only", "AllowA8" or "AllowA4" */
} nf_quant_rule;

typedef struct {
    nf_quant_rule *v;
    size_t n;
    bool allow_unmatched;    /* a rule that matches no parameter is no error */
} nf_quant_rules;

/* Parse one rule in the command-line syntax; on error a `usage` diagnostic
 * names the text. Returns 0 or -1. */
int nf_quant_rule_parse(const char *text, nf_quant_rules *rules, nf_diags *d);

/* Parse a recipe: {"rules": [{"match", "format", "layout"?, "divisors"?,
 * "activation_policy"?}, ...]} (rules appended in order). Returns 0 or -1
 * with diagnostics pointing into the recipe. */
int nf_quant_recipe_parse(const char *text, size_t len, nf_quant_rules *rules, nf_diags *d);

void nf_quant_rules_free(nf_quant_rules *rules);

/* Apply rules to a parsed manifest: a rule whose glob matches no
 * bound parameter's name (a typo would otherwise ship an unquantized
 * manifest) is a `usage` error naming it (exit 2) unless
 * rules->allow_unmatched; nothing is changed then. For each binding the last
 * matching rule wins; rules touch only rank-2 parents (norms, biases and
 * other vectors a glob also matches are left as they are); a parent takes
 * the encoding its parameters ask for, and two parameters asking one parent
 * for different encodings is an error naming both; an encoding the parent's
 * shape cannot hold (nvfp4 needs N%128=0 and K%64=0) is an `encoding` error
 * naming the parameter. A rule's policy sets activation_policy on every use
 * of the parameter; AllowA4 on nvfp4 adds an activation_input_divisor
 * auxiliary (a new fp32 scalar object of value 1.0) to each such use. A
 * use whose parameter's objects move from gguf_* formats to ours loses its
 * input_columns auxiliary (ninfer-quant(1)): the permutation, which must be
 * Qwen3.5's v-heads-tiled order (its values inline or in an artifact's
 * int32 object), becomes a column unpermute in each object's source, so
 * the new objects hold the columns in logical order (`unsupported` when it
 * cannot be: another permutation, an object also read without it, a
 * source that already has an unpermute). The rules are recorded as
 * provenance.quantization. Returns 0 or -1. */
int nf_quant_apply(nf_catalog *c, const nf_quant_rules *rules, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
