/* nf_catalog_write.c — catalog serialization (nf_catalog_serialize) and
 * provenance editing. */
#include "nf_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_catalog_int.h"
#include "nf_json.h"
#include "nf_util.h"

/* ---- serialization ---- */

static nf_jval *binding_json(const nf_binding *b)
{
    nf_jval *o = nf_jnew_object();
    if (!o)
        return NULL;
    if (!b->parts) {
        nf_jobj_set(o, "object", nf_jnew_string(b->object ? b->object : ""));
        return o;
    }
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < b->n_parts; i++) {
        nf_jval *p = nf_jnew_object(), *r = nf_jnew_array();
        if (!p || !r) {
            nf_jval_free(p);
            nf_jval_free(r);
            nf_jval_free(arr);
            nf_jval_free(o);
            return NULL;
        }
        nf_jobj_set(p, "object", nf_jnew_string(b->parts[i].object ? b->parts[i].object : ""));
        nf_jarr_push(r, nf_jnew_u64(b->parts[i].begin));
        nf_jarr_push(r, nf_jnew_u64(b->parts[i].end));
        nf_jobj_set(p, "range", r);
        nf_jarr_push(arr, p);
    }
    nf_jobj_set(o, "parts", arr);
    return o;
}

/* The unescaped name of a member (raw_name is a span of accepted JSON). */
static char *member_name(const char *text, nf_span raw_name)
{
    const char *raw = text + raw_name.start;
    if (!memchr(raw, '\\', raw_name.len))
        return strndup(raw, raw_name.len);
    char *quoted = NULL, *out = NULL;
    if (asprintf(&quoted, "\"%.*s\"", (int)raw_name.len, raw) < 0)
        return NULL;
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *nd = nf_jdoc_parse(quoted, strlen(quoted), 4, &tmp);
    size_t nl = 0;
    const char *name = nd ? nf_jstr(nf_jdoc_root(nd), &nl) : NULL;
    if (name)
        out = strndup(name, nl);
    nf_jdoc_free(nd);
    nf_diags_free(&tmp);
    free(quoted);
    return out;
}

/* metadata members other than integrity, their values as written */
static bool meta_member(void *vctx, const char *text, nf_span raw_name, nf_span value)
{
    nf_jval *m = vctx;
    char *name = member_name(text, raw_name);
    if (name && strcmp(name, "integrity") != 0)
        nf_jobj_set(m, name, nf_jnew_raw(text + value.start, value.len));
    free(name);
    return true;
}

char *nf_catalog_serialize(const nf_catalog *c, const nf_serialize_opts *op, size_t *len)
{
    nf_jval *root = nf_jnew_object();
    if (!root)
        return NULL;
    nf_jval *comps = nf_jnew_object();
    for (size_t i = 0; i < c->n_components; i++) {
        const nf_component *k = &c->components[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "config", nf_jnew_raw(k->config_text ? k->config_text : "{}",
                                             k->config_text ? k->config_len : 2));
        if (k->target)
            nf_jobj_set(o, "target", nf_jnew_string(k->target));
        if (k->n_resources) {
            nf_jval *r = nf_jnew_object();
            for (size_t j = 0; j < k->n_resources; j++)
                nf_jobj_set(r, k->resources[j].role, nf_jnew_string(k->resources[j].object));
            nf_jobj_set(o, "resources", r);
        }
        if (k->has_proposal) {
            nf_jval *p = nf_jnew_object();
            nf_jobj_set(p, "domain", nf_jnew_string(k->proposal_indexed ? "indexed" : "full"));
            if (k->has_rows)
                nf_jobj_set(p, "rows", nf_jnew_u64(k->proposal_rows));
            nf_jobj_set(o, "proposal", p);
        }
        nf_jobj_set(comps, k->id, o);
    }
    nf_jobj_set(root, "components", comps);

    nf_jval *objs = nf_jnew_array();
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *ob = &c->objects[i];
        nf_jval *o = nf_jnew_object();
        /* a catalog with problems may lack any of these: write "" */
        nf_jobj_set(o, "id", nf_jnew_string(ob->id ? ob->id : ""));
        if (ob->kind == NF_OBJ_TENSOR) {
            nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
            nf_jval *sh = nf_jnew_array();
            for (unsigned r = 0; r < ob->rank; r++)
                nf_jarr_push(sh, nf_jnew_u64(ob->dims[r]));
            nf_jobj_set(o, "shape", sh);
            nf_jobj_set(o, "format", nf_jnew_string(ob->format_name ? ob->format_name : ""));
            nf_jobj_set(o, "layout", nf_jnew_string(ob->layout_name ? ob->layout_name : ""));
        } else {
            nf_jobj_set(o, "kind", nf_jnew_string("resource"));
            nf_jobj_set(o, "encoding", nf_jnew_string(ob->encoding_name ? ob->encoding_name
                                                                        : "raw_bytes_v1"));
        }
        if (!op->manifest) {
            nf_jobj_set(o, "offset", nf_jnew_u64(ob->offset));
            nf_jobj_set(o, "bytes", nf_jnew_u64(ob->bytes));
        } else if (ob->kind == NF_OBJ_RESOURCE && ob->bytes_given && !op->artifact_path) {
            nf_jobj_set(o, "bytes", nf_jnew_u64(ob->bytes));
        }
        if (ob->kind == NF_OBJ_TENSOR && ob->has_divisors)
            nf_jobj_set(o, "divisors", nf_jnew_u64(ob->divisors));
        if (op->manifest && !op->artifact_path && ob->source_raw) {
            nf_jobj_set(o, "source", nf_jnew_raw(ob->source_raw, strlen(ob->source_raw)));
        } else if (op->manifest && op->artifact_path) {
            nf_jval *s = nf_jnew_object();
            nf_jobj_set(s, "artifact", nf_jnew_string(op->artifact_path));
            nf_jobj_set(s, "object", nf_jnew_string(ob->id ? ob->id : ""));
            nf_jobj_set(o, "source", s);
        }
        nf_jarr_push(objs, o);
    }
    nf_jobj_set(root, "objects", objs);

    nf_jval *binds = nf_jnew_object();
    for (size_t i = 0; i < c->n_bindings; i++)
        nf_jobj_set(binds, c->bindings[i].name, binding_json(&c->bindings[i].b));
    nf_jobj_set(root, "bindings", binds);

    nf_jval *uses = nf_jnew_array();
    for (size_t i = 0; i < c->n_uses; i++) {
        const nf_use *u = &c->uses[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "parameter", nf_jnew_string(u->parameter ? u->parameter : ""));
        nf_jobj_set(o, "input", nf_jnew_string(u->input ? u->input : ""));
        if (u->activation_policy)
            nf_jobj_set(o, "activation_policy", nf_jnew_string(u->activation_policy));
        if (u->n_aux) {
            nf_jval *a = nf_jnew_object();
            for (size_t j = 0; j < u->n_aux; j++)
                nf_jobj_set(a, u->aux[j].role, binding_json(&u->aux[j].b));
            nf_jobj_set(o, "auxiliaries", a);
        }
        nf_jarr_push(uses, o);
    }
    nf_jobj_set(root, "uses", uses);

    if (!op->manifest && op->files) {
        nf_jval *files = nf_jnew_array();
        for (size_t i = 0; i < op->n_files; i++) {
            nf_jval *f = nf_jnew_object();
            nf_jobj_set(f, "path", op->files[i].path ? nf_jnew_string(op->files[i].path) : NULL);
            nf_jobj_set(f, "payload_bytes", nf_jnew_u64(op->files[i].payload_bytes));
            nf_jarr_push(files, f);
        }
        nf_jobj_set(root, "files", files);
    }

    bool any_digest = false;
    if (op->digests && !op->manifest)
        for (size_t i = 0; i < c->n_objects; i++)
            any_digest |= c->objects[i].has_digest;
    if (c->has_metadata || any_digest) {
        nf_jval *m = nf_jnew_object();
        if (c->metadata_text)
            nf_jspan_members(c->metadata_text, nf_jspan_root(c->metadata_text, c->metadata_len),
                             meta_member, m);
        if (any_digest) {
            nf_jval *in = nf_jnew_object(), *sh = nf_jnew_object();
            for (size_t i = 0; i < c->n_objects; i++)
                if (c->objects[i].has_digest) {
                    char hex[65];
                    nf_object_digest_hex(&c->objects[i], hex);
                    nf_jobj_set(sh, c->objects[i].id, nf_jnew_string(hex));
                }
            nf_jobj_set(in, "sha256", sh);
            nf_jobj_set(m, "integrity", in);
        }
        nf_jobj_set(root, "metadata", m);
    }
    if (c->provenance_text)
        nf_jobj_set(root, "provenance", nf_jnew_raw(c->provenance_text, c->provenance_len));
    char *text = nf_jval_to_text(root, op->pretty, len);
    nf_jval_free(root);
    return text;
}

/* ---- manifest editing ---- */

struct prov_ctx {
    const char *skip;
    nf_jval *obj;
    bool ok;
};

static bool prov_member(void *vctx, const char *text, nf_span raw_name, nf_span value)
{
    struct prov_ctx *pc = vctx;
    char *q = NULL;
    if (asprintf(&q, "\"%.*s\"", (int)raw_name.len, text + raw_name.start) < 0)
        return pc->ok = false;
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *nd = nf_jdoc_parse(q, strlen(q), 4, &tmp);
    size_t nl = 0;
    const char *name = nd ? nf_jstr(nf_jdoc_root(nd), &nl) : NULL;
    if (name && strcmp(name, pc->skip) != 0)
        pc->ok &= nf_jobj_set(pc->obj, name, nf_jnew_raw(text + value.start, value.len));
    nf_jdoc_free(nd);
    nf_diags_free(&tmp);
    free(q);
    return pc->ok;
}

bool nf_catalog_set_provenance(nf_catalog *c, const char *name, const char *value_json)
{
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *vd = nf_jdoc_parse(value_json, strlen(value_json), 0, &tmp);
    nf_diags_free(&tmp);
    if (!vd)
        return false;
    nf_jdoc_free(vd);
    struct prov_ctx pc = {name, nf_jnew_object(), true};
    if (!pc.obj)
        return false;
    if (c->provenance_text)
        nf_jspan_members(c->provenance_text, nf_jspan_root(c->provenance_text, c->provenance_len),
                         prov_member, &pc);
    pc.ok &= nf_jobj_set(pc.obj, name, nf_jnew_raw(value_json, strlen(value_json)));
    char *t = pc.ok ? nf_jval_to_text(pc.obj, false, NULL) : NULL;
    nf_jval_free(pc.obj);
    if (!t)
        return false;
    free(c->own_provenance);
    c->own_provenance = t;
    c->provenance_text = t;
    c->provenance_len = strlen(t);
    c->has_provenance = true;
    return true;
}
