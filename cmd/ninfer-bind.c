/* ninfer-bind — the binder: list logical parameters, check them against the
 * architecture, print the resolved plan, extract one parameter decoded. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_binder.h"
#include "nf_loadplan.h"
#include "nf_cli.h"
#include "nf_io.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-bind [OPTIONS] ARTIFACT\n"
    "       ninfer-bind --check [--component C,...] ARTIFACT...\n"
    "       ninfer-bind --plan [--component C,...] ARTIFACT\n"
    "       ninfer-bind --extract NAME [--dtype f32|bf16|i32] ARTIFACT > values.bin\n"
    "The architecture binder (see ninfer-bind(1)). Without a mode, list the logical\n"
    "parameters, one per line: name, shape, elements, format/layout, parent\n"
    "objects, view or gather (tab-separated).\n"
    "\n"
    "      --check             check bindings and uses against the architecture\n"
    "                          (coverage, unknown parameters, uses, auxiliaries,\n"
    "                          targets, selected components)\n"
    "      --plan              JSON: each parameter's parts, plane byte intervals and\n"
    "                          the file segments a loader reads\n"
    "      --extract NAME      the parameter's logical elements, decoded, as raw\n"
    "                          little-endian values on stdout\n"
    "      --dtype T           f32 (default), bf16, or i32 (int32 parameters)\n"
    "      --component C,...   only these components (a selected one brings its\n"
    "                          target)\n"
    "      --json              list and --check as JSON\n"
    "  -q, --quiet             --check prints nothing on success\n"
    "      --max-json-bytes N  refuse catalogs larger than N (default 256M)\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "ARTIFACT may be '-' (a stream) for listing and --check.\n"
    "Exit status: 0 ok, 1 a rule is broken, 2 usage, 3 I/O error (a missing part),\n"
    "4 unsupported (an unknown architecture, format or layout).\n";

typedef struct {
    enum { M_LIST, M_CHECK, M_PLAN, M_EXTRACT } mode;
    const char *extract;
    nf_extract_dtype dtype;
    nf_bind_opts bo;
    bool json, quiet;
    uint64_t max_json;
} opts;

/* The component that owns a logical name (NULL: none), as the catalog
 * resolved it; root "proposal/" names belong to text when it has a
 * proposal record. */
static const nf_component *owner_of(const nf_catalog *c, const char *name)
{
    size_t w = nf_catalog_owner(c, name);
    return w < c->n_components ? &c->components[w] : NULL;
}

static bool selected(const nf_arch_plan *plans, size_t np, const nf_catalog *c, const opts *o,
                     const char *name)
{
    if (!o->bo.n_components)
        return true;
    const nf_component *k = owner_of(c, name);
    for (size_t i = 0; k && i < np; i++)
        if (!strcmp(plans[i].component, k->id))
            return true;
    return false;
}

static const nf_param *param_of(const nf_arch_plan *plans, size_t np, const char *name)
{
    for (size_t i = 0; i < np; i++) {
        const nf_param *p = nf_arch_find(&plans[i], name);
        if (p)
            return p;
    }
    return NULL;
}

/* Is one part a zero-copy view (DESIGN 8)? */
static bool part_view(const nf_object *o, uint64_t b, uint64_t e)
{
    nf_tensor_enc te;
    nf_plane_span sp[NF_MAX_PLANES];
    bool view = false;
    if (nf_tensor_enc_init(&te, o->format, o->layout, o->dims, o->rank, o->divisors, NULL) != NF_ENC_OK)
        return false;
    return nf_part_spans(&te, b, e, sp, &view) > 0 && view;
}

static void shape_of(const nf_catalog *c, const nf_named_binding *nb, const nf_param *p,
                     unsigned *rank, uint64_t *dims)
{
    if (p) {
        *rank = p->rank;
        memcpy(dims, p->dims, p->rank * sizeof *dims);
    } else if (!nb->b.parts && nb->b.obj < c->n_objects) {
        *rank = c->objects[nb->b.obj].rank;
        memcpy(dims, c->objects[nb->b.obj].dims, *rank * sizeof *dims);
    } else {
        *rank = 1;
        if (!nf_binding_elements(c, &nb->b, &dims[0]))
            dims[0] = 0;
    }
}

static int list(const nf_catalog *c, const nf_arch_plan *plans, size_t np, const opts *o)
{
    nf_jval *arr = o->json ? nf_jnew_array() : NULL;
    /* parents listed for the binding being printed: seen[obj] == i + 1 */
    size_t *seen = calloc(c->n_objects ? c->n_objects : 1, sizeof *seen);
    if (!seen) {
        nf_jval_free(arr);
        fprintf(stderr, "%s: out of memory\n", nf_prog);
        return NF_EXIT_IO;
    }
    for (size_t i = 0; i < c->n_bindings; i++) {
        const nf_named_binding *nb = &c->bindings[i];
        if (!selected(plans, np, c, o, nb->name))
            continue;
        unsigned rank;
        uint64_t dims[NF_MAX_RANK], el = 0;
        shape_of(c, nb, param_of(plans, np, nb->name), &rank, dims);
        nf_binding_elements(c, &nb->b, &el);
        /* fl: the formats/layouts as they are (--json's field, and the
         * repeats' test); flt and parents: the text line's, each name
         * escaped (NF_FIELD_ESCAPES: a "," or a tab in an ID splits nothing) */
        char shape[256], fl[256] = "", flt[1024] = "", parents[4096] = "";
        nf_shape_str(dims, rank, shape, sizeof shape);
        size_t n = nb->b.parts ? nb->b.n_parts : 1;
        bool view = n == 1;
        nf_jval *par = o->json ? nf_jnew_array() : NULL;
        for (size_t k = 0; k < n; k++) {
            size_t oi = nb->b.parts ? nb->b.parts[k].obj : nb->b.obj;
            if (oi >= c->n_objects)
                continue;
            const nf_object *ob = &c->objects[oi];
            char one[256];
            snprintf(one, sizeof one, "%s/%s", ob->format_name, ob->layout_name);
            if (!strstr(fl, one) && strlen(fl) + strlen(one) + 2 < sizeof fl) {
                snprintf(fl + strlen(fl), sizeof fl - strlen(fl), "%s%s", *fl ? "," : "", one);
                char *ef = nf_text_escape_also(ob->format_name, NF_FIELD_ESCAPES);
                char *el = nf_text_escape_also(ob->layout_name, NF_FIELD_ESCAPES);
                if (ef && el && strlen(flt) + strlen(ef) + strlen(el) + 3 < sizeof flt)
                    snprintf(flt + strlen(flt), sizeof flt - strlen(flt), "%s%s/%s",
                             *flt ? "," : "", ef, el);
                free(ef);
                free(el);
            }
            bool dup = seen[oi] == i + 1;
            seen[oi] = i + 1;
            if (!dup) {
                char *eid = nf_text_escape_also(ob->id, NF_FIELD_ESCAPES);
                if (eid && strlen(parents) + strlen(eid) + 2 < sizeof parents)
                    snprintf(parents + strlen(parents), sizeof parents - strlen(parents), "%s%s",
                             *parents ? "," : "", eid);
                free(eid);
                if (par)
                    nf_jarr_push(par, nf_jnew_string(ob->id));
            }
            if (nb->b.parts && !part_view(ob, nb->b.parts[k].begin, nb->b.parts[k].end))
                view = false;
        }
        if (o->json) {
            nf_jval *r = nf_jnew_object(), *sh = nf_jnew_array();
            for (unsigned k = 0; k < rank; k++)
                nf_jarr_push(sh, nf_jnew_u64(dims[k]));
            nf_jobj_set(r, "name", nf_jnew_string(nb->name));
            nf_jobj_set(r, "shape", sh);
            nf_jobj_set(r, "elements", nf_jnew_u64(el));
            nf_jobj_set(r, "format_layout", nf_jnew_string(fl));
            nf_jobj_set(r, "parents", par);
            nf_jobj_set(r, "view", nf_jnew_bool(view));
            nf_jarr_push(arr, r);
        } else {
            nf_fput_field(nb->name, 0, stdout);
            printf("\t%s\t%llu\t%s\t%s\t%s\n", shape, (unsigned long long)el, flt, parents,
                   view ? "view" : "gather");
        }
    }
    free(seen);
    if (arr) {
        char *t = nf_jval_to_text(arr, true, NULL);
        if (t)
            puts(t);
        free(t);
        nf_jval_free(arr);
    }
    return 0;
}

/* One record of json-c's pretty text at level 0 written as it stands two
 * levels deeper: 4 more spaces after each newline (strings hold none). */
static void put_indented(const char *t)
{
    for (const char *nl; (nl = strchr(t, '\n')); t = nl + 1) {
        fwrite(t, 1, (size_t)(nl + 1 - t), stdout);
        fputs("    ", stdout);
    }
    fputs(t, stdout);
}

/* One part of a parameter's plan as DESIGN 6's JSON. */
static nf_jval *part_json(nf_artifact *a, const nf_param_plan *pp, const nf_part_plan *part)
{
    const nf_object *ob = &nf_artifact_catalog(a)->objects[part->object];
    nf_jval *pt = nf_jnew_object(), *r = nf_jnew_array();
    nf_jobj_set(pt, "object", nf_jnew_string(ob->id));
    nf_jarr_push(r, nf_jnew_u64(part->begin));
    nf_jarr_push(r, nf_jnew_u64(part->end));
    nf_jobj_set(pt, "range", r);
    nf_jobj_set(pt, "format", nf_jnew_string(ob->format_name));
    nf_jobj_set(pt, "layout", nf_jnew_string(ob->layout_name));
    if (part->status != NF_ENC_OK)
        return pt;
    nf_jval *planes = nf_jnew_array(), *segs = nf_jnew_array();
    for (unsigned j = 0; j < part->n_planes; j++) {
        nf_jval *pl = nf_jnew_object();
        nf_jobj_set(pl, "plane", nf_jnew_string(part->planes[j].plane));
        nf_jobj_set(pl, "offset", nf_jnew_u64(part->planes[j].offset));
        nf_jobj_set(pl, "bytes", nf_jnew_u64(part->planes[j].bytes));
        nf_jarr_push(planes, pl);
    }
    for (size_t j = 0; j < part->n_segments; j++) {
        const nf_segment *sg = &pp->segments[part->first_segment + j];
        nf_jval *g = nf_jnew_object();
        nf_jobj_set(g, "file", nf_jnew_string(nf_artifact_file_path(a, sg->file)));
        nf_jobj_set(g, "file_offset", nf_jnew_u64(sg->file_offset));
        nf_jobj_set(g, "bytes", nf_jnew_u64(sg->bytes));
        nf_jarr_push(segs, g);
    }
    nf_jobj_set(pt, "view", nf_jnew_bool(part->view));
    nf_jobj_set(pt, "planes", planes);
    nf_jobj_set(pt, "segments", segs);
    return pt;
}

/* The plan is written one parameter at a time (each record built, written
 * and freed), byte for byte what one json-c tree of the whole plan printed
 * pretty: memory is the catalog's plus one record (red-team C1: the tree of
 * a 74k-tensor plan took 19x the catalog, 8.2 GB for 1M bindings); the
 * library computes each parameter's plan (nf_param_plan_make). */
static int plan(nf_artifact *a, const nf_arch_plan *plans, size_t np, const opts *o, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    size_t written = 0;
    fputs("{\n  \"parameters\": [", stdout);
    for (size_t i = 0; i < c->n_bindings; i++) {
        const nf_named_binding *nb = &c->bindings[i];
        if (!selected(plans, np, c, o, nb->name))
            continue;
        unsigned rank;
        uint64_t dims[NF_MAX_RANK];
        shape_of(c, nb, param_of(plans, np, nb->name), &rank, dims);
        nf_jval *p = nf_jnew_object(), *sh = nf_jnew_array(), *parts = nf_jnew_array();
        for (unsigned k = 0; k < rank; k++)
            nf_jarr_push(sh, nf_jnew_u64(dims[k]));
        nf_jobj_set(p, "name", nf_jnew_string(nb->name));
        nf_jobj_set(p, "shape", sh);
        nf_param_plan pp;
        if (nf_param_plan_make(a, &nb->b, &pp, d) < 0) {
            nf_jval_free(p);
            nf_jval_free(parts);
            break;
        }
        for (size_t k = 0; k < pp.n_parts; k++)
            nf_jarr_push(parts, part_json(a, &pp, &pp.parts[k]));
        nf_param_plan_free(&pp);
        nf_jobj_set(p, "parts", parts);
        char *t = nf_jval_to_text(p, true, NULL);
        nf_jval_free(p);
        if (!t) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            break;
        }
        fputs(written++ ? ",\n    " : "\n    ", stdout);
        put_indented(t);
        free(t);
    }
    fputs("\n  ]\n}\n", stdout);
    nf_stdout_flush(d);
    return nf_diags_exit(d);
}

static int to_stdout(void *ctx, const void *buf, size_t n)
{
    (void)ctx;
    return nf_write_all(1, buf, n) ? -2 : 0;
}

static int extract(nf_artifact *a, const opts *o, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    size_t i = nf_catalog_binding(c, o->extract);
    if (i != SIZE_MAX) {
        int rc = nf_binding_extract(a, &c->bindings[i].b, o->dtype, to_stdout, NULL, d);
        if (rc == -2)
            nf_diag_stdout(d, errno);
        return nf_diags_exit(d);
    }
    nf_diag_add(d, NF_C_REFERENCE, "/bindings", "no parameter \"%s\" is bound", o->extract);
    return nf_diags_exit(d);
}

/* Split "a,b,c" into bo (the strings point into arg). */
static int parse_components(char *arg, nf_bind_opts *bo)
{
    size_t n = 1;
    for (char *p = arg; *p; p++)
        n += *p == ',';
    const char **v = calloc(n, sizeof *v);
    if (!v)
        return -1;
    size_t k = 0;
    for (char *s = strtok(arg, ","); s; s = strtok(NULL, ","))
        v[k++] = s;
    if (!k) {
        free(v);
        return -1;
    }
    bo->components = v;
    bo->n_components = k;
    return 0;
}

static int run_one(const char *path, const opts *o)
{
    nf_diags d = NF_DIAGS_INIT;
    d.file = nf_display_name(path);
    nf_operand op;
    nf_open_opts oo = {0};
    oo.max_json_bytes = o->max_json;
    int ex;
    int orc = nf_operand_open_out(&op, path, &oo, NULL, 0, &d);
    if (orc == NF_STDOUT_REFUSED) {
        /* standard output is this artifact (`>> A`): nothing written there,
         * not even a --json record; the diagnostic on stderr */
        nf_diags_print(&d, nf_prog, stderr);
        nf_diags_free(&d);
        return NF_EXIT_USAGE;
    }
    if (orc != 0) {
        ex = nf_diags_exit(&d);
        goto out;
    }
    if (nf_diags_exit(&d)) {
        /* an artifact that opened but breaks a rule is closed too */
        ex = nf_diags_exit(&d);
        nf_operand_close(&op);
        goto out;
    }
    nf_artifact *a = op.a;
    const nf_catalog *c = nf_artifact_catalog(a);
    bool stream = nf_artifact_is_stream(a);
    if (stream && (o->mode == M_PLAN || o->mode == M_EXTRACT)) {
        nf_diag_add(&d, NF_C_USAGE, "", "--plan and --extract need an artifact's files, not a stream");
        ex = nf_diags_exit(&d);
        nf_operand_close(&op);
        goto out;
    }
    if (o->mode == M_CHECK) {
        nf_binder_check(c, stream ? NULL : a, &o->bo, &d);
        ex = nf_diags_exit(&d);
        if (o->json) {
            nf_jval *r = nf_jnew_object();
            nf_jobj_set(r, "file", nf_jnew_string(path));
            nf_jobj_set(r, "exit", nf_jnew_i64(ex));
            nf_jobj_set(r, "parameters", nf_jnew_u64(c->n_bindings));
            nf_jobj_set(r, "uses", nf_jnew_u64(c->n_uses));
            nf_jobj_set(r, "diagnostics", nf_diags_json(&d));
            nf_print_json_line(r);
            nf_jval_free(r);
        } else if (!ex && !o->quiet) {
            nf_fput_text(path, stdout); /* as in diagnostics */
            printf(": OK (%zu parameters, %zu uses)\n", c->n_bindings, c->n_uses);
            nf_stdout_flush(&d);
            ex = nf_diags_exit(&d);
        }
    } else {
        nf_arch_plan *plans = NULL;
        size_t np = 0;
        nf_diags quiet = NF_DIAGS_INIT; /* listing falls back to object shapes */
        nf_binder_plans(c, &o->bo, &plans, &np, &quiet);
        for (size_t i = 0; i < quiet.n; i++)
            if (quiet.v[i].code == NF_C_COMPONENT_MISSING)
                nf_diag_add(&d, NF_C_COMPONENT_MISSING, quiet.v[i].pointer, "%s", quiet.v[i].message);
        nf_diags_free(&quiet);
        if (!nf_diags_exit(&d)) {
            if (o->mode == M_LIST) {
                list(c, plans, np, o);
                nf_stdout_flush(&d);
            } else if (o->mode == M_PLAN)
                plan(a, plans, np, o, &d);
            else
                extract(a, o, &d);
        }
        nf_arch_plans_free(plans, np);
        ex = nf_diags_exit(&d);
    }
    nf_operand_close(&op);
    goto done;
out:
    if (o->json && o->mode == M_CHECK) {
        /* an operand that could not be checked still gets its record */
        nf_jval *r = nf_jnew_object();
        nf_jobj_set(r, "file", nf_jnew_string(path));
        nf_jobj_set(r, "exit", nf_jnew_i64(ex));
        nf_jobj_set(r, "diagnostics", nf_diags_json(&d));
        nf_print_json_line(r);
        nf_jval_free(r);
    }
done:
    if (!(o->json && o->mode == M_CHECK))
        nf_diags_print(&d, nf_prog, stderr);
    nf_diags_free(&d);
    return ex;
}

int main(int argc, char **argv)
{
    enum { O_CHECK = 256, O_PLAN, O_EXTRACT, O_DTYPE, O_COMPONENT, O_JSON, O_VERSION, O_MAXJ };
    static const struct option lo[] = {
        {"check", no_argument, 0, O_CHECK},
        {"plan", no_argument, 0, O_PLAN},
        {"extract", required_argument, 0, O_EXTRACT},
        {"dtype", required_argument, 0, O_DTYPE},
        {"component", required_argument, 0, O_COMPONENT},
        {"json", no_argument, 0, O_JSON},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-bind";
    opts o;
    memset(&o, 0, sizeof o);
    int c, modes = 0;
    bool dtype_given = false;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case O_CHECK: o.mode = M_CHECK; modes++; break;
        case O_PLAN: o.mode = M_PLAN; modes++; break;
        case O_EXTRACT: o.mode = M_EXTRACT; o.extract = optarg; modes++; break;
        case O_DTYPE:
            dtype_given = true;
            if (!strcmp(optarg, "f32"))
                o.dtype = NF_EXTRACT_F32;
            else if (!strcmp(optarg, "bf16"))
                o.dtype = NF_EXTRACT_BF16;
            else if (!strcmp(optarg, "i32"))
                o.dtype = NF_EXTRACT_I32;
            else
                return nf_usage_error("bad --dtype '%s' (f32, bf16 or i32)", optarg);
            break;
        case O_COMPONENT:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            if (parse_components(optarg, &o.bo) != 0)
                return nf_usage_error("bad --component '%s'", optarg);
            break;
        case O_JSON: o.json = true; break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &o.max_json))
                return NF_EXIT_USAGE;
            break;
        case 'q': o.quiet = true; break;
        case 'h': nf_help_print(usage); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: {
            int rr = nf_remote_or_bad_option(c, argc, argv, lo);
            if (rr)
                return rr;
            break;
        }
        }
    }
    if (modes > 1)
        return nf_usage_error("--check, --plan and --extract exclude each other");
    if (dtype_given && o.mode != M_EXTRACT)
        return nf_usage_error("--dtype goes with --extract");
    if (optind >= argc)
        return nf_usage_error("no artifact given");
    if (o.mode != M_CHECK && optind + 1 != argc)
        return nf_usage_error("one artifact at a time (several only with --check)");
    if (o.mode == M_EXTRACT && isatty(1))
        return nf_usage_error("refusing to write binary data (--extract) to a terminal (redirect it)");
    int ex = 0;
    bool refused = false;
    if (argc - optind > 1) {
        /* several operands: standard output onto any of them is refused
         * before the first is written for */
        nf_diags d = NF_DIAGS_INIT;
        nf_open_opts oo = {.max_json_bytes = o.max_json};
        if (nf_stdout_operands_check(argv + optind, (size_t)(argc - optind), &oo, NULL, 0, &d) < 0)
            ex = NF_EXIT_USAGE, refused = true;
        nf_diags_print(&d, nf_prog, stderr);
        nf_diags_free(&d);
    }
    for (int i = optind; !refused && i < argc; i++)
        ex = nf_exit_combine(ex, run_one(argv[i], &o));
    free((void *)o.bo.components);
    return nf_stdout_close(ex);
}
