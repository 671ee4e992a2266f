/* ninfer-cat — print parts of an artifact, or the whole artifact as a stream. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_cli.h"
#include "nf_select.h"
#include "nf_stream.h"
#include "nf_util.h"
#include "nf_writer.h"

static const char usage[] =
    "usage: ninfer-cat [SELECTOR] [OPTIONS] ARTIFACT|-\n"
    "Print part of an NInfer v3 artifact, or with no selector the whole artifact as\n"
    "a single-file stream (byte-identical for a single-file artifact).\n"
    "\n"
    "Selectors (at most one):\n"
    "  --header              the entry header as JSON\n"
    "  --catalog             the JSON catalog as stored (trailing whitespace removed)\n"
    "  --manifest            a manifest whose sources are this artifact's objects\n"
    "  --files               the files table as JSON (index, path, payload_bytes,\n"
    "                        logical_offset, file_bytes)\n"
    "  --object ID           the encoded bytes of one object\n"
    "  --resource ROLE       the bytes of a resource of --component (default text)\n"
    "  --range OFFSET:LENGTH logical payload bytes [OFFSET, OFFSET+LENGTH)\n"
    "Options:\n"
    "  --component C[,C...]  component for --resource (default text); with --files,\n"
    "                        only the files holding what these components need\n"
    "                        (their bindings, auxiliaries and resources; targets too)\n"
    "  --zstd[=LEVEL]        compress what is written (default level 3)\n"
    "  --reproducible        with no selector, a multi-part artifact's stream gets\n"
    "                        the artifact_id of its catalog's digests (implied by\n"
    "                        SOURCE_DATE_EPOCH), not a random one\n"
    "  --artifact-id HEX     with no selector, the stream's artifact_id\n"
    "  --max-json-bytes N    refuse catalogs larger than N (default 256M)\n"
    "  -h, --help            this text\n"
    "      --version         print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the artifact breaks a rule, 2 usage, 3 I/O error,\n"
    "4 unsupported.\n";

enum sel { S_STREAM, S_HEADER, S_CATALOG, S_MANIFEST, S_FILES, S_OBJECT, S_RESOURCE, S_RANGE };

static struct {
    enum sel sel;
    const char *arg, *component;
    int zstd;
    nf_open_opts open;
    uint64_t off, len;
    nf_write_opts wo; /* the stream's artifact_id (--reproducible, --artifact-id) */
} opt;

static nf_output *out;
static nf_diags d = NF_DIAGS_INIT;

static int emit(const void *buf, size_t n)
{
    int rc = nf_output_write(out, buf, n);
    if (rc) {
        nf_diag_stdout(&d, -rc);
        return -1;
    }
    return 0;
}

static int emit_text(char *t, size_t n)
{
    if (!t) {
        nf_diag_add(&d, NF_C_IO, "", "out of memory");
        return -1;
    }
    int rc = emit(t, n);
    if (!rc)
        rc = emit("\n", 1);
    free(t);
    return rc;
}

/* The library writes the bytes (nf_stream.h); a failed write is stdout's. */
static int lib_out(int rc, int out_err)
{
    if (rc && out_err)
        nf_diag_stdout(&d, out_err);
    return rc ? -1 : 0;
}

/* Payload range from a file artifact or (in order) from a stream, then, for
 * a stream, the check that it ends where its catalog says. */
static int range_out(nf_artifact *a, uint64_t off, uint64_t len)
{
    int err = 0, rc = nf_stream_write_range(a, off, len, out, &err, &d);
    if (lib_out(rc, err) < 0)
        return -1;
    return nf_stream_drain(a, &d);
}

/* The whole artifact as a stream (DESIGN 4). */
static int whole_out(nf_operand *op)
{
    int err = 0, rc = nf_stream_write(op->a, &opt.wo, out, &err, &d);
    if (lib_out(rc, err) < 0)
        return -1;
    return nf_stream_drain(op->a, &d);
}

/* Text a terminal may show: UTF-8 with no control character but tab,
 * newline and carriage return (nothing that could drive the terminal). */
static bool is_text(const char *p, size_t n)
{
    if (nf_utf8_invalid_at(p, n) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f)
            return false;
        if (ch == 0xc2 && i + 1 < n && (unsigned char)p[i + 1] < 0xa0)
            return false; /* C1 controls */
    }
    return true;
}

/* A resource: mostly text (tokenizer.json, a chat template), which a user
 * reads right on the terminal; one that is not text (tokenizer.model) is
 * refused there as binary output is (red-team E27). Shown on a terminal
 * only from an artifact file and up to 64 MiB, read whole first. */
static int resource_out(nf_artifact *a, const nf_object *o)
{
    if (!isatty(1))
        return range_out(a, o->offset, o->bytes);
    char *buf = NULL;
    bool text = false;
    if (!nf_artifact_is_stream(a) && o->bytes <= (64u << 20)) {
        buf = malloc(o->bytes ? (size_t)o->bytes : 1);
        if (!buf) {
            nf_diag_add(&d, NF_C_IO, "", "out of memory");
            return -1;
        }
        if (nf_artifact_read(a, o->offset, buf, (size_t)o->bytes, &d) < 0) {
            free(buf);
            return -1;
        }
        text = is_text(buf, (size_t)o->bytes);
    }
    int rc = -1;
    if (!text)
        nf_diag_add(&d, NF_C_USAGE, "", "resource \"%s\" %s: refusing to write binary data to "
                    "a terminal (redirect it)", o->id,
                    nf_artifact_is_stream(a) ? "comes from a stream, unseen"
                    : buf ? "is not text" : "is over 64 MiB");
    else
        rc = emit(buf, (size_t)o->bytes);
    free(buf);
    return rc;
}

static int files_out(nf_artifact *a)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    bool *need = calloc(c->n_files, sizeof *need);
    if (!need)
        return -1;
    if (opt.component) {
        bool *comps = calloc(c->n_components ? c->n_components : 1, sizeof *comps);
        bool *objs = calloc(c->n_objects ? c->n_objects : 1, sizeof *objs);
        int rc = comps && objs ? nf_select(c, opt.component, true, comps, objs, &d) : -1;
        for (size_t i = 0; rc == 0 && i < c->n_objects; i++)
            if (objs[i])
                nf_artifact_files_touched(a, c->objects[i].offset, c->objects[i].bytes, need);
        free(comps);
        free(objs);
        if (rc < 0) {
            free(need);
            return -1;
        }
    }
    need[0] = true; /* the entry: header and catalog are always read */
    nf_jval *arr = nf_files_json(a, opt.component ? need : NULL);
    free(need);
    size_t n;
    char *t = nf_jval_to_text(arr, true, &n);
    nf_jval_free(arr);
    return emit_text(t, n);
}

static int run(nf_operand *op)
{
    nf_artifact *a = op->a;
    const nf_catalog *c = nf_artifact_catalog(a);
    const nf_header *h = nf_artifact_header(a);
    bool broken = nf_diags_exit(&d) == NF_EXIT_RULE;
    switch (opt.sel) {
    case S_HEADER: {
        char id[33];
        nf_hex(h->artifact_id, 16, id);
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "version", nf_jnew_u64(3));
        nf_jobj_set(o, "json_bytes", nf_jnew_u64(h->json_bytes));
        nf_jobj_set(o, "artifact_id", nf_jnew_string(id));
        nf_jobj_set(o, "entry_payload_start", nf_jnew_u64(h->entry_payload_start));
        size_t n;
        char *t = nf_jval_to_text(o, true, &n);
        nf_jval_free(o);
        return emit_text(t, n);
    }
    case S_CATALOG: {
        size_t n;
        const char *j = nf_artifact_json(a, &n);
        while (n && (j[n - 1] == ' ' || j[n - 1] == '\n' || j[n - 1] == '\t' || j[n - 1] == '\r'))
            n--;
        return emit(j, n) || emit("\n", 1) ? -1 : 0;
    }
    case S_FILES:
        return files_out(a);
    default:
        break;
    }
    if (broken)
        return -1; /* the diagnostics above say why; no bytes from a broken artifact */
    switch (opt.sel) {
    case S_MANIFEST: {
        /* a URL artifact is named by its URL (without query and credentials) */
        char *rp = nf_artifact_is_stream(a)   ? NULL
                   : nf_artifact_is_remote(a) ? strdup(nf_artifact_path(a))
                                              : realpath(nf_artifact_path(a), NULL);
        if (!rp) {
            nf_diag_add(&d, NF_C_USAGE, "", "--manifest needs an artifact file, not a stream");
            return -1;
        }
        /* the manifest names this artifact by its path; JSON holds only
         * UTF-8, and a path written any other way would name another file */
        if (nf_utf8_invalid_at(rp, strlen(rp)) != strlen(rp)) {
            nf_diag_addf(&d, NF_C_USAGE, rp, "",
                         "--manifest names the artifact by this path, which is not valid UTF-8: "
                         "a manifest cannot hold it (rename the artifact)");
            free(rp);
            return -1;
        }
        nf_serialize_opts so = {0};
        so.manifest = true;
        so.artifact_path = rp;
        so.pretty = true;
        size_t n;
        char *t = nf_catalog_serialize(c, &so, &n);
        free(rp);
        return emit_text(t, n);
    }
    case S_OBJECT: {
        size_t i = nf_catalog_find(c, opt.arg);
        if (i == SIZE_MAX) {
            nf_diag_add(&d, NF_C_REFERENCE, "/objects", "no object \"%s\"", opt.arg);
            return -1;
        }
        return range_out(a, c->objects[i].offset, c->objects[i].bytes);
    }
    case S_RESOURCE: {
        const char *comp = opt.component ? opt.component : NF_TEXT_COMPONENT;
        for (size_t i = 0; i < c->n_components; i++) {
            if (strcmp(c->components[i].id, comp) != 0)
                continue;
            for (size_t k = 0; k < c->components[i].n_resources; k++) {
                const nf_resource_ref *r = &c->components[i].resources[k];
                if (strcmp(r->role, opt.arg) == 0 && r->obj != SIZE_MAX)
                    return resource_out(a, &c->objects[r->obj]);
            }
            nf_diag_add(&d, NF_C_REFERENCE, "", "component \"%s\" has no resource \"%s\"", comp,
                        opt.arg);
            return -1;
        }
        nf_diag_add(&d, NF_C_COMPONENT_MISSING, "/components", "no component \"%s\"", comp);
        return -1;
    }
    case S_RANGE:
        return range_out(a, opt.off, opt.len);
    case S_STREAM:
        return whole_out(op);
    default:
        return -1;
    }
}

static int set_sel(enum sel s, const char *arg)
{
    if (opt.sel != S_STREAM)
        return -1;
    opt.sel = s;
    opt.arg = arg;
    return 0;
}

int main(int argc, char **argv)
{
    enum { O_HEADER = 256, O_CATALOG, O_MANIFEST, O_FILES, O_OBJECT, O_RESOURCE, O_RANGE,
           O_COMPONENT, O_ZSTD, O_MAXJ, O_VERSION };
    static const struct option lo[] = {
        {"header", no_argument, 0, O_HEADER},
        {"catalog", no_argument, 0, O_CATALOG},
        {"manifest", no_argument, 0, O_MANIFEST},
        {"files", no_argument, 0, O_FILES},
        {"object", required_argument, 0, O_OBJECT},
        {"resource", required_argument, 0, O_RESOURCE},
        {"range", required_argument, 0, O_RANGE},
        {"component", required_argument, 0, O_COMPONENT},
        {"zstd", optional_argument, 0, O_ZSTD},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        NF_ID_LONGOPTS,
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-cat";
    int c, bad = 0;
    uint64_t v;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        int r = nf_id_opt(&opt.wo, c, optarg);
        if (r == NF_EXIT_USAGE)
            return r;
        if (r)
            continue;
        switch (c) {
        case O_HEADER: bad |= set_sel(S_HEADER, NULL); break;
        case O_CATALOG: bad |= set_sel(S_CATALOG, NULL); break;
        case O_MANIFEST: bad |= set_sel(S_MANIFEST, NULL); break;
        case O_FILES: bad |= set_sel(S_FILES, NULL); break;
        case O_OBJECT: bad |= set_sel(S_OBJECT, optarg); break;
        case O_RESOURCE: bad |= set_sel(S_RESOURCE, optarg); break;
        case O_RANGE: {
            bad |= set_sel(S_RANGE, optarg);
            char *colon = strchr(optarg, ':');
            if (!colon)
                return nf_usage_error("--range takes OFFSET:LENGTH");
            *colon = 0;
            const char *why = nf_size_parse(optarg, &opt.off);
            if (why)
                return nf_usage_error("bad --range offset '%s': %s", optarg, why);
            if ((why = nf_size_parse(colon + 1, &opt.len)) != NULL)
                return nf_usage_error("bad --range length '%s': %s", colon + 1, why);
            break;
        }
        case O_COMPONENT:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            opt.component = optarg;
            break;
        case O_ZSTD:
            opt.zstd = 3;
            if (optarg && (!nf_parse_u64(optarg, &v) || v < 1 || v > 22))
                return nf_usage_error("bad --zstd level '%s' (1..22)", optarg);
            if (optarg)
                opt.zstd = (int)v;
            break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            opt.open.max_json_bytes = v;
            break;
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
    if (bad)
        return nf_usage_error("give at most one selector");
    if (opt.wo.id_mode != NF_ID_RANDOM && opt.sel != S_STREAM)
        return nf_usage_error("--reproducible and --artifact-id frame the whole artifact as a "
                              "stream: no selector");
    opt.wo.warn = nf_cli_warn;
    nf_id_env(&opt.wo);
    if (optind + 1 != argc) {
        /* `ninfer-cat --object model.ninfer`: the artifact was taken as the ID */
        if (optind >= argc && opt.arg && access(opt.arg, F_OK) == 0)
            return nf_usage_error("no artifact given ('%s' was taken as the selector's argument)",
                                  opt.arg);
        return nf_usage_error(optind >= argc ? "no artifact given" : "one artifact at a time");
    }
    /* DESIGN 3: binary output (a stream, an object, a range, anything
     * compressed) is refused on a terminal, for every command alike; a
     * resource is shown there only when it is text (resource_out) */
    bool binary = opt.zstd || opt.sel == S_STREAM || opt.sel == S_OBJECT ||
                  opt.sel == S_RANGE;
    if (binary && isatty(1))
        return nf_usage_error("refusing to write binary data to a terminal (redirect it)");
    const char *path = argv[optind];
    d.file = nf_display_name(path);
    out = nf_output_open_fd(1, opt.zstd, false);
    if (!out)
        return NF_EXIT_IO;
    nf_operand op;
    /* `ninfer-cat A >> A`, onto a part too: refused before a byte */
    if (nf_operand_open_out(&op, path, &opt.open, NULL, 0, &d) == 0) {
        if (run(&op) == 0) {
            int rc = nf_output_finish(out);
            if (rc)
                nf_diag_stdout(&d, -rc);
        }
        nf_operand_close(&op);
    }
    nf_output_close(out);
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
