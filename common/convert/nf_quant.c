/* nf_quant.c — rules over logical names, applied to parents and uses. */
#include "nf_quant.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_json.h"
#include "nf_layout.h"
#include "nf_source.h"
#include "nf_util.h"

static bool policy_ok(const char *p)
{
    return !strcmp(p, "A16Only") || !strcmp(p, "AllowA8") || !strcmp(p, "AllowA4");
}

static int check_rule(nf_quant_rule *r, const char *where, nf_diags *d)
{
    nf_format f = nf_format_from_name(r->format, strlen(r->format));
    if (f == NF_FMT_UNKNOWN && nf_format_is_reserved(r->format, strlen(r->format))) {
        nf_diag_add(d, NF_C_UNSUPPORTED, where, "format \"%s\"%s is not supported by this build",
                    r->format, nf_format_reserved_note(r->format, strlen(r->format)));
        return -1;
    }
    if (f == NF_FMT_UNKNOWN) {
        nf_diag_add(d, NF_C_USAGE, where, "unknown format \"%s\"", r->format);
        return -1;
    }
    if (nf_format_is_gguf(f)) { /* DESIGN 7.5 */
        nf_diag_add(d, NF_C_UNSUPPORTED, where,
                    "format %s holds a GGUF tensor's bytes as they are; the toolkit does not "
                    "quantize into gguf formats", r->format);
        return -1;
    }
    nf_layout want = nf_format_default_layout(f);
    if (r->layout) {
        nf_layout l = nf_layout_from_name(r->layout, strlen(r->layout));
        if (l != want) {
            nf_diag_add(d, NF_C_USAGE, where, "format %s takes layout %s, not \"%s\"", r->format,
                        nf_layout_name(want), r->layout);
            return -1;
        }
    } else {
        r->layout = strdup(nf_layout_name(want));
    }
    if (r->divisors > 1 && f != NF_FMT_NVFP4) {
        nf_diag_add(d, NF_C_USAGE, where, "divisors > 1 is for nvfp4 only");
        return -1;
    }
    if (r->policy && !policy_ok(r->policy)) {
        nf_diag_add(d, NF_C_USAGE, where, "policy must be A16Only, AllowA8 or AllowA4");
        return -1;
    }
    return 0;
}

static bool push(nf_quant_rules *rules, nf_quant_rule *r)
{
    nf_quant_rule *nv = realloc(rules->v, (rules->n + 1) * sizeof *nv);
    if (!nv)
        return false;
    rules->v = nv;
    rules->v[rules->n++] = *r;
    return true;
}

static void rule_free(nf_quant_rule *r)
{
    free(r->match);
    free(r->format);
    free(r->layout);
    free(r->policy);
}

int nf_quant_rule_parse(const char *text, nf_quant_rules *rules, nf_diags *d)
{
    nf_quant_rule r = {0};
    const char *eq = strrchr(text, '=');
    /* the glob may hold '='? no: names never do; split at the first '=' */
    eq = strchr(text, '=');
    if (!eq || eq == text) {
        /* a newcomer's `ninfer-quant manifest.json`: a file, not a rule */
        bool file = !eq && access(text, F_OK) == 0;
        nf_diag_add(d, NF_C_USAGE, "", "rule \"%s\" is not GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P]%s",
                    text, file ? " (it names a file: read a manifest with -i FILE or < FILE)" : "");
        return -1;
    }
    r.match = strndup(text, (size_t)(eq - text));
    char *rest = strdup(eq + 1), *save = NULL;
    int bad = !r.match || !rest;
    for (char *tok = rest ? strtok_r(rest, ",", &save) : NULL; tok && !bad;
         tok = strtok_r(NULL, ",", &save)) {
        if (!r.format) {
            char *colon = strchr(tok, ':');
            if (colon) {
                *colon = 0;
                r.layout = strdup(colon + 1);
            }
            r.format = strdup(tok);
        } else if (!strncmp(tok, "divisors=", 9)) {
            bad |= !nf_parse_u64(tok + 9, &r.divisors) || r.divisors == 0;
        } else if (!strncmp(tok, "policy=", 7)) {
            r.policy = strdup(tok + 7);
        } else {
            bad = 1;
        }
    }
    free(rest);
    if (bad || !r.format) {
        nf_diag_add(d, NF_C_USAGE, "", "rule \"%s\" is not GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P]", text);
        rule_free(&r);
        return -1;
    }
    char where[300];
    snprintf(where, sizeof where, "%.280s", text);
    if (check_rule(&r, "", d) < 0 || !push(rules, &r)) {
        rule_free(&r);
        return -1;
    }
    return 0;
}

/* Member `name` of recipe rule e (at ptr) as a C string: NULL when absent,
 * or (with a `schema` record at its pointer, *bad set) when it is not a
 * string or holds U+0000, which would cut "q8_g32_fp16\u0000junk" to a
 * format it does not name (ninfer-quant(1)). */
static const char *rule_str(nf_jval *e, const char *name, const char *ptr, bool *bad,
                            nf_diags *d)
{
    nf_jval *v = nf_jobj_get(e, name);
    if (!v)
        return NULL;
    size_t n = 0;
    const char *s = nf_jstr(v, &n);
    if (s && !memchr(s, 0, n))
        return s;
    char *q = nf_ptr_join(ptr, name, strlen(name));
    nf_diag_add(d, NF_C_SCHEMA, q ? q : ptr, "%s must be a string%s", name,
                s ? " without U+0000" : "");
    free(q);
    *bad = true;
    return NULL;
}

int nf_quant_recipe_parse(const char *text, size_t len, nf_quant_rules *rules, nf_diags *d)
{
    nf_jdoc *doc = nf_jdoc_parse(text, len, 0, d);
    if (!doc)
        return -1;
    nf_jval *arr = nf_jobj_get(nf_jdoc_root(doc), "rules");
    int rc = 0;
    if (nf_jtype_of(arr) != NF_J_ARRAY) {
        nf_diag_add(d, NF_C_SCHEMA, "/rules", "a recipe is {\"rules\": [...]}");
        rc = -1;
    }
    for (size_t i = 0; !rc && i < nf_jarr_len(arr); i++) {
        nf_jval *e = nf_jarr_get(arr, i);
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/rules/%zu", i);
        bool bad = false;
        const char *m = rule_str(e, "match", ptr, &bad, d);
        const char *f = rule_str(e, "format", ptr, &bad, d);
        const char *l = rule_str(e, "layout", ptr, &bad, d);
        const char *pol = rule_str(e, "activation_policy", ptr, &bad, d);
        if (bad) {
            rc = -1;
            break;
        }
        nf_jiter it = nf_jobj_iter(e);
        const char *k;
        nf_jval *v;
        while (nf_jobj_next(&it, &k, &v))
            if (strcmp(k, "match") && strcmp(k, "format") && strcmp(k, "layout") &&
                strcmp(k, "divisors") && strcmp(k, "activation_policy")) {
                nf_diag_add(d, NF_C_SCHEMA, ptr, "unknown member \"%s\" in a rule", k);
                rc = -1;
            }
        nf_quant_rule r = {0};
        if (!m || !f) {
            nf_diag_add(d, NF_C_SCHEMA, ptr, "a rule needs \"match\" and \"format\" strings");
            rc = -1;
            break;
        }
        if (nf_jobj_has(e, "divisors") &&
            (nf_jval_u64(doc, nf_jobj_get(e, "divisors"), NULL, &r.divisors) != NF_JU64_OK ||
             r.divisors == 0)) {
            nf_diag_add(d, NF_C_SCHEMA, ptr, "divisors must be a positive integer");
            rc = -1;
            break;
        }
        r.match = strdup(m);
        r.format = strdup(f);
        r.layout = l ? strdup(l) : NULL;
        r.policy = pol ? strdup(pol) : NULL;
        if (check_rule(&r, ptr, d) < 0 || !push(rules, &r)) {
            rule_free(&r);
            rc = -1;
        }
    }
    nf_jdoc_free(doc);
    return rc;
}

void nf_quant_rules_free(nf_quant_rules *rules)
{
    for (size_t i = 0; i < rules->n; i++)
        rule_free(&rules->v[i]);
    free(rules->v);
    rules->v = NULL;
    rules->n = 0;
}

/* Per object: the rule and parameter that chose its encoding. */
typedef struct {
    const nf_quant_rule *rule;
    const char *param;
} choice;

static int choose(nf_catalog *c, choice *ch, size_t obj, const nf_quant_rule *r,
                  const char *param, nf_diags *d)
{
    nf_object *o = &c->objects[obj];
    if (o->kind != NF_OBJ_TENSOR || o->rank != 2)
        return 0; /* rules are for matrices; vectors keep their encoding */
    if (ch[obj].rule) {
        const nf_quant_rule *p = ch[obj].rule;
        uint64_t dp = p->divisors ? p->divisors : 1, dr = r->divisors ? r->divisors : 1;
        if (strcmp(p->format, r->format) || strcmp(p->layout, r->layout) || dp != dr) {
            nf_diag_add(d, NF_C_ENCODING, "",
                        "object \"%s\" is asked for %s by \"%s\" and for %s by \"%s\"", o->id,
                        p->format, ch[obj].param, r->format, param);
            return -1;
        }
        return 0;
    }
    nf_format f = nf_format_from_name(r->format, strlen(r->format));
    nf_layout l = nf_layout_from_name(r->layout, strlen(r->layout));
    nf_encoding enc;
    const char *why = NULL;
    nf_enc_status st = nf_encoding_compute(f, l, o->dims, 2, r->divisors ? r->divisors : 1, &enc, &why);
    if (st != NF_ENC_OK) {
        nf_diag_add(d, NF_C_ENCODING, "", "parameter \"%s\" (object \"%s\", %llux%llu) cannot be %s: %s",
                    param, o->id, (unsigned long long)o->dims[0], (unsigned long long)o->dims[1],
                    r->format, why ? why : "not allowed");
        return -1;
    }
    ch[obj].rule = r;
    ch[obj].param = param;
    return 0;
}

/* ---- folding input_columns (DESIGN 10) ------------------------------------ */

/* The K int32 values of input_columns object oi: from an inline values
 * source, or an artifact object's words. NULL with a diagnostic. */
static int64_t *cols_values(const nf_catalog *c, size_t oi, uint64_t K, nf_diags *d)
{
    const nf_object *o = &c->objects[oi];
    const nf_source *s = o->source;
    int64_t *v = malloc((K ? K : 1) * sizeof *v);
    if (!v) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    if (s && s->kind == NF_SRC_VALUES && s->n_values == K && !s->has_unpermute && !s->map) {
        for (uint64_t i = 0; i < K; i++)
            v[i] = (int64_t)s->values[i];
        return v;
    }
    if (s && s->kind == NF_SRC_ARTIFACT && !s->has_unpermute && !s->map && !s->has_rows) {
        nf_open_opts oo = {0};
        nf_diags tmp = NF_DIAGS_INIT;
        nf_artifact *a = nf_artifact_open(s->path, &oo, &tmp);
        const nf_catalog *ac = a ? nf_artifact_catalog(a) : NULL;
        size_t j = ac ? nf_catalog_find(ac, s->name) : SIZE_MAX;
        int32_t *w = malloc((K ? K : 1) * 4);
        bool ok = j != SIZE_MAX && w && ac->objects[j].format == NF_FMT_INT32 &&
                  ac->objects[j].elements == K &&
                  nf_artifact_read(a, ac->objects[j].offset, w, (size_t)K * 4, &tmp) == 0;
        for (uint64_t i = 0; ok && i < K; i++)
            v[i] = w[i];
        free(w);
        nf_artifact_close(a);
        nf_diags_move(d, &tmp);
        nf_diags_free(&tmp);
        if (ok)
            return v;
    }
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "input_columns object \"%s\": folding needs its %llu "
                "values inline or in an artifact's int32 object", o->id, (unsigned long long)K);
    free(v);
    return NULL;
}

/* The (Hk, Hv, Dv) of v-heads-tiled input_columns ic[0..K) (GGUF.md 3.3:
 * ic[(j*Hk + g)*Dv + d] = (g*r + j)*Dv + d); Hk = Hv = 1, Dv = K for the
 * identity. False for any other permutation. */
static bool vt_params(const int64_t *ic, uint64_t K, uint64_t *hk, uint64_t *hv, uint64_t *hd)
{
    uint64_t dv = 0;
    while (dv < K && ic[dv] == (int64_t)dv)
        dv++;
    if (dv == K) {
        *hk = *hv = 1;
        *hd = K;
        return true;
    }
    if (dv == 0 || K % dv || ic[dv] < 0 || (uint64_t)ic[dv] % dv)
        return false;
    uint64_t v = K / dv, r = (uint64_t)ic[dv] / dv;
    if (r < 2 || v % r)
        return false;
    uint64_t k = v / r;
    for (uint64_t c = 0; c < K; c++) {
        uint64_t head = c / dv, j = head / k, g = head % k;
        if (ic[c] != (int64_t)((g * r + j) * dv + c % dv))
            return false;
    }
    *hk = k;
    *hv = v;
    *hd = dv;
    return true;
}

/* Object i's source with a column unpermute added (DESIGN 5), written back
 * as its manifest source (nf_source_write). */
static bool add_col_unpermute(nf_catalog *c, size_t i, uint64_t hk, uint64_t hv, uint64_t hd,
                              nf_diags *d)
{
    const nf_object *o = &c->objects[i];
    if (!o->source || o->source->has_unpermute || o->source->kind == NF_SRC_CONCAT) {
        nf_diag_add(d, NF_C_UNSUPPORTED, "", "object \"%s\": its source cannot take a column "
                    "unpermute (it has one, or is a concat)", o->id);
        return false;
    }
    nf_source s = *o->source; /* shares the parsed source's strings: only written */
    nf_source_set_column_unpermute(&s, hk, hv, hd);
    char *t = nf_source_text(&s);
    if (!t || !nf_object_set_source_raw(c, i, t)) {
        free(t);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return false;
    }
    free(t);
    return true;
}

/* Uses whose parameter moves out of gguf_* formats lose their
 * input_columns: its permutation goes into the objects' sources as a
 * column unpermute, so the new objects hold the columns in logical order.
 * was_gguf[i]: object i was gguf_* before the rules. */
static int fold_input_columns(nf_catalog *c, const bool *was_gguf, nf_diags *d)
{
    size_t n = c->n_objects;
    uint8_t *plain = calloc(n ? n : 1, 1), *folded = calloc(n ? n : 1, 1);
    int rc = 0;
    if (!plain || !folded) {
        free(plain);
        free(folded);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    /* objects some use reads without input_columns cannot change their columns */
    for (size_t u = 0; u < c->n_uses; u++) {
        const nf_use *use = &c->uses[u];
        bool has = false;
        for (size_t j = 0; j < use->n_aux; j++)
            has |= !strcmp(use->aux[j].role, "input_columns");
        const nf_binding *b = use->binding < c->n_bindings ? &c->bindings[use->binding].b : NULL;
        for (size_t k = 0; b && !has && k < (b->parts ? b->n_parts : 1); k++) {
            size_t oi = b->parts ? b->parts[k].obj : b->obj;
            if (oi < n)
                plain[oi] = 1;
        }
    }
    for (size_t u = 0; u < c->n_uses && !rc; u++) {
        nf_use *use = &c->uses[u];
        const nf_aux *x = NULL;
        for (size_t j = 0; j < use->n_aux; j++)
            if (!strcmp(use->aux[j].role, "input_columns"))
                x = &use->aux[j];
        const nf_binding *b = use->binding < c->n_bindings ? &c->bindings[use->binding].b : NULL;
        if (!x || !b)
            continue;
        size_t np = b->parts ? b->n_parts : 1, moved = 0;
        uint64_t K = 0;
        for (size_t k = 0; k < np; k++) {
            size_t oi = b->parts ? b->parts[k].obj : b->obj;
            if (oi < n && was_gguf[oi] && !nf_format_is_gguf(c->objects[oi].format))
                moved++;
            if (oi < n && c->objects[oi].rank == 2)
                K = c->objects[oi].dims[1];
        }
        if (!moved)
            continue; /* still gguf_*: the input_columns stays */
        size_t xi = x->b.parts || x->b.obj >= n ? SIZE_MAX : x->b.obj;
        int64_t *ic = NULL;
        uint64_t hk, hv, hd;
        if (moved != np || xi == SIZE_MAX) {
            nf_diag_add(d, NF_C_UNSUPPORTED, "", "\"%s\": input_columns can be folded only when "
                        "every part of the parameter leaves the gguf_* formats and the columns are "
                        "one whole object", use->parameter);
            rc = -1;
        } else if (!(ic = cols_values(c, xi, K, d))) {
            rc = -1;
        } else if (!vt_params(ic, K, &hk, &hv, &hd)) {
            nf_diag_add(d, NF_C_UNSUPPORTED, "", "\"%s\": input_columns that are not Qwen3.5's "
                        "v-heads-tiled order cannot be folded into a source", use->parameter);
            rc = -1;
        }
        for (size_t k = 0; !rc && k < np; k++) {
            size_t oi = b->parts ? b->parts[k].obj : b->obj;
            if (folded[oi])
                continue;
            if (plain[oi]) {
                nf_diag_add(d, NF_C_UNSUPPORTED, "", "object \"%s\" is also read without "
                            "input_columns; its columns cannot be reordered", c->objects[oi].id);
                rc = -1;
            } else if (hk != hv && !add_col_unpermute(c, oi, hk, hv, hd, d)) {
                rc = -1;
            }
            folded[oi] = 1;
        }
        free(ic);
        if (!rc)
            nf_use_remove_aux(c, use, "input_columns");
    }
    free(plain);
    free(folded);
    return rc;
}

/* The last rule matching each parameter (by_param, by binding index) and
 * the encoding each object gets (choose); a rule matching nothing is a
 * usage error unless allowed. */
static int match_rules(nf_catalog *c, const nf_quant_rules *rules, choice *ch,
                       const nf_quant_rule **by_param, nf_diags *d)
{
    bool *matched = calloc(rules->n ? rules->n : 1, sizeof *matched);
    int rc = 0;
    if (!matched) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (size_t b = 0; b < c->n_bindings; b++) {
        const nf_named_binding *nb = &c->bindings[b];
        const nf_quant_rule *r = NULL;
        for (size_t i = 0; i < rules->n; i++)
            if (fnmatch(rules->v[i].match, nb->name, 0) == 0) {
                r = &rules->v[i];
                matched[i] = true;
            }
        if (!r)
            continue;
        by_param[b] = r;
        if (!nb->b.parts) {
            if (nb->b.obj != SIZE_MAX && choose(c, ch, nb->b.obj, r, nb->name, d) < 0)
                rc = -1;
        } else {
            for (size_t k = 0; k < nb->b.n_parts; k++)
                if (nb->b.parts[k].obj != SIZE_MAX &&
                    choose(c, ch, nb->b.parts[k].obj, r, nb->name, d) < 0)
                    rc = -1;
        }
    }
    for (size_t i = 0; !rules->allow_unmatched && i < rules->n; i++)
        if (!matched[i]) {
            nf_diag_add(d, NF_C_USAGE, "",
                        "rule %zu ('%s=%s') matches no parameter of the manifest "
                        "(--allow-unmatched permits it)",
                        i + 1, rules->v[i].match, rules->v[i].format);
            rc = -1;
        }
    free(matched);
    return rc;
}

/* Each chosen object re-encoded; was_gguf[i]: object i was gguf_* before. */
static int apply_encodings(nf_catalog *c, size_t n0, const choice *ch, bool *was_gguf,
                           nf_diags *d)
{
    for (size_t i = 0; i < n0; i++) {
        was_gguf[i] = nf_format_is_gguf(c->objects[i].format);
        if (!ch[i].rule)
            continue;
        const nf_quant_rule *r = ch[i].rule;
        if (!nf_object_set_encoding(c, i, r->format, r->layout, r->divisors)) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
    }
    return 0;
}

/* The rules' policies on the uses, and the nvfp4 activation divisor of
 * AllowA4 (spec 8): an fp32 scalar 1.0 from an inline source (DESIGN 5). */
static int set_policies(nf_catalog *c, const nf_quant_rule *const *by_param, nf_diags *d)
{
    double one = 1.0;
    char *divisor_src = nf_source_text(&(nf_source){.kind = NF_SRC_VALUES, .values = &one,
                                                    .n_values = 1, .dtype = "f32"});
    int rc = 0;
    if (!divisor_src) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (size_t u = 0; u < c->n_uses; u++) {
        nf_use *use = &c->uses[u];
        /* the use's binding was resolved when the manifest was read */
        const nf_quant_rule *r = use->binding < c->n_bindings ? by_param[use->binding] : NULL;
        /* a lookup use (token ids into the embedding) has no policy to set */
        if (!r || !r->policy || !use->activation_policy)
            continue;
        if (!nf_use_set_policy(c, use, r->policy)) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            rc = -1;
            break;
        }
        if (strcmp(r->policy, "AllowA4") || strcmp(r->format, "nvfp4"))
            continue;
        char *id = NULL;
        if (asprintf(&id, "a.%s@%s.activation_input_divisor", use->parameter, use->input) < 0) {
            rc = -1;
            break;
        }
        size_t oi = nf_catalog_find(c, id);
        /* an object of that ID is reused only when it is the divisor an
         * earlier run made (an fp32 scalar); anything else under the name
         * would bind the use to the wrong object (red-team E26) */
        if (oi != SIZE_MAX && (c->objects[oi].kind != NF_OBJ_TENSOR ||
                               c->objects[oi].format != NF_FMT_FP32 ||
                               c->objects[oi].elements != 1)) {
            char *q = nf_ptr_index("/objects", oi);
            nf_diag_add(d, NF_C_DUPLICATE_ID, q ? q : "",
                        "object \"%s\" exists and is not the fp32 scalar that the activation "
                        "divisor of \"%s\" (AllowA4, spec 8) must be: rename it",
                        id, use->parameter);
            free(q);
            free(id);
            rc = -1;
            continue;
        }
        if (oi == SIZE_MAX)
            oi = nf_catalog_add_tensor(c, id, NULL, 0, "fp32", "contiguous_le_v1", divisor_src);
        if (oi == SIZE_MAX || (!nf_use_add_aux(c, use, "activation_input_divisor", id, oi) &&
                               use->n_aux == 0)) {
            nf_diag_add(d, NF_C_IO, "", "cannot add the activation divisor of \"%s\"", use->parameter);
            rc = -1;
        }
        free(id);
    }
    free(divisor_src);
    return rc;
}

/* The rules into provenance.quantization (DESIGN 7.4: the recipe goes into
 * provenance; a second run keeps the first one's record under
 * "previous"). */
static int record_rules(nf_catalog *c, const nf_quant_rules *rules)
{
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < rules->n; i++) {
        const nf_quant_rule *r = &rules->v[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "match", nf_jnew_string(r->match));
        nf_jobj_set(o, "format", nf_jnew_string(r->format));
        nf_jobj_set(o, "layout", nf_jnew_string(r->layout));
        if (r->divisors)
            nf_jobj_set(o, "divisors", nf_jnew_u64(r->divisors));
        if (r->policy)
            nf_jobj_set(o, "activation_policy", nf_jnew_string(r->policy));
        nf_jarr_push(arr, o);
    }
    nf_jval *q = nf_jnew_object();
    nf_jobj_set(q, "tool", nf_jnew_string("ninfer-quant " NF_VERSION));
    nf_jobj_set(q, "encoder", nf_jnew_string("ninfer-formats(7) defaults (least-squares scale search)"));
    nf_jobj_set(q, "rules", arr);
    if (c->provenance_text) {
        nf_span prev;
        if (nf_jspan_member(c->provenance_text, nf_jspan_root(c->provenance_text, c->provenance_len),
                            "quantization", 12, &prev))
            nf_jobj_set(q, "previous", nf_jnew_raw(c->provenance_text + prev.start, prev.len));
    }
    char *t = nf_jval_to_text(q, false, NULL);
    nf_jval_free(q);
    int rc = t && nf_catalog_set_provenance(c, "quantization", t) ? 0 : -1;
    free(t);
    return rc;
}

int nf_quant_apply(nf_catalog *c, const nf_quant_rules *rules, nf_diags *d)
{
    size_t n0 = c->n_objects;
    choice *ch = calloc(n0 ? n0 : 1, sizeof *ch);
    const nf_quant_rule **by_param = calloc(c->n_bindings ? c->n_bindings : 1, sizeof *by_param);
    bool *was_gguf = calloc(n0 ? n0 : 1, sizeof *was_gguf);
    int rc = -1;
    if (!ch || !by_param || !was_gguf)
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    else if (match_rules(c, rules, ch, by_param, d) == 0 &&
             apply_encodings(c, n0, ch, was_gguf, d) == 0 &&
             fold_input_columns(c, was_gguf, d) == 0) {
        /* the record is written even when a policy could not be set */
        rc = set_policies(c, by_param, d);
        if (record_rules(c, rules) < 0)
            rc = -1;
    }
    free(ch);
    free(by_param);
    free(was_gguf);
    return rc;
}
