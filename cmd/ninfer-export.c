/* ninfer-export — an artifact back out: a GGUF file or a Hugging Face
 * checkpoint directory. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_cli.h"
#include "nf_export.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-export --gguf [-o OUT.gguf|-] [OPTIONS] ARTIFACT\n"
    "       ninfer-export --safetensors -o DIR [OPTIONS] ARTIFACT\n"
    "Write an artifact back out (see ninfer-export(1)): as a GGUF file that\n"
    "llama.cpp loads (byte for byte the source of a GGUF import whose tensors\n"
    "are unchanged), or as a Hugging Face checkpoint directory.\n"
    "\n"
    "      --gguf              write a GGUF (-o - or no -o: standard output)\n"
    "      --safetensors       write a checkpoint directory (-o DIR)\n"
    "  -o, --output PATH       the file or directory (absent or empty unless --force)\n"
    "      --force             replace an existing output\n"
    "      --fallback T        GGUF: formats without a lossless GGUF type become\n"
    "                          f32 (default, exact), f16, bf16 or q8_0 (lossy)\n"
    "      --no-tokenizer      GGUF: tokenizer.ggml.model \"none\" with the vocab size\n"
    "      --dtype T           safetensors: decoded formats as bf16 (default, lossy\n"
    "                          for some) or f32 (exact)\n"
    "      --max-shard-size N  safetensors: shard above N bytes (default 5GB)\n"
    "      --component C,...   export these components (default: text, and mtp\n"
    "                          where the format has a place for it)\n"
    "      --drop              leave out declared components the format cannot carry\n"
    "      --verify            hash every object first and check its digest (else\n"
    "                          copies are made by the kernel without reading them)\n"
    "      --json              print a JSON summary on stdout (not with -o -)\n"
    "      --progress          show progress even when stderr is not a terminal\n"
    "  -q, --quiet             no progress, no warnings\n"
    "      --no-sync           do not fdatasync before publishing\n"
    "      --max-json-bytes N  refuse catalogs larger than N (default 256M)\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the artifact breaks a rule (or a name or shape the\n"
    "format cannot hold, a config missing a key), 2 usage, 3 I/O error,\n"
    "4 unsupported (an architecture, tokenizer or component the format has no\n"
    "place for).\n";

typedef struct {
    bool json, quiet;
    nf_jval *lossy;      /* --json: the lossy tensors */
    FILE *report;        /* the lossy lines, when not --json */
    const char *out;
} cli;

static void warn(void *ctx, const char *msg)
{
    cli *c = ctx;
    if (c->quiet)
        return;
    fprintf(stderr, "%s: ", nf_prog);
    nf_fput_text(msg, stderr);
    fputc('\n', stderr);
}

/* Each lossy tensor: a warning line with its error (as ninfer-pack
 * --report measures it), or a record of the --json summary. */
static void lossy(void *ctx, const nf_export_lossy *l)
{
    cli *c = ctx;
    if (c->lossy) {
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "tensor", nf_jnew_string(l->tensor));
        nf_jobj_set(o, "from", nf_jnew_string(l->from));
        nf_jobj_set(o, "to", nf_jnew_string(l->to));
        nf_jobj_set(o, "rmse", nf_jnew_double(l->rmse));
        nf_jobj_set(o, "max_abs_error", nf_jnew_double(l->max_abs));
        nf_jobj_set(o, "snr_db", isinf(l->snr_db) ? nf_jnew_null() : nf_jnew_double(l->snr_db));
        nf_jarr_push(c->lossy, o);
        return;
    }
    if (c->quiet)
        return;
    fprintf(stderr, "%s: ", nf_prog);
    nf_fput_text(c->out, stderr);
    fputs(": warning: tensor \"", stderr);
    nf_fput_text(l->tensor, stderr);
    fprintf(stderr, "\" %s -> %s is lossy: rmse %.9g, max abs error %.9g, snr %.3f dB\n",
            l->from, l->to, l->rmse, l->max_abs, l->snr_db);
}

static nf_jval *names_json(char **v, size_t n)
{
    nf_jval *a = nf_jnew_array();
    for (size_t i = 0; i < n; i++)
        nf_jarr_push(a, nf_jnew_string(v[i]));
    return a;
}

int main(int argc, char **argv)
{
    enum { O_GGUF = 256, O_ST, O_FORCE, O_FALLBACK, O_NOTOK, O_DTYPE, O_SHARD, O_COMP, O_DROP,
           O_JSON, O_PROGRESS, O_NOSYNC, O_MAXJ, O_VERSION, O_VERIFY };
    static const struct option lo[] = {
        {"gguf", no_argument, 0, O_GGUF},
        {"safetensors", no_argument, 0, O_ST},
        {"output", required_argument, 0, 'o'},
        {"force", no_argument, 0, O_FORCE},
        {"fallback", required_argument, 0, O_FALLBACK},
        {"no-tokenizer", no_argument, 0, O_NOTOK},
        {"dtype", required_argument, 0, O_DTYPE},
        {"max-shard-size", required_argument, 0, O_SHARD},
        {"component", required_argument, 0, O_COMP},
        {"drop", no_argument, 0, O_DROP},
        {"verify", no_argument, 0, O_VERIFY},
        {"json", no_argument, 0, O_JSON},
        {"progress", no_argument, 0, O_PROGRESS},
        {"quiet", no_argument, 0, 'q'},
        {"no-sync", no_argument, 0, O_NOSYNC},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-export";
    nf_export_opts o = {.sync = true};
    nf_open_opts oo = {0};
    cli cl = {0};
    int fmt = 0, progress = 0, c;
    uint64_t v;
    char *comp_arg = NULL;
    const char *comps[64];
    size_t n_comps = 0;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
        switch (c) {
        case O_GGUF:
        case O_ST:
            if (fmt && fmt != c)
                return nf_usage_error("--gguf or --safetensors, not both");
            fmt = c;
            break;
        case 'o': o.out = optarg; break;
        case O_FORCE: o.force = true; break;
        case O_FALLBACK:
            if (!strcmp(optarg, "f32"))
                o.fallback = NF_FALLBACK_F32;
            else if (!strcmp(optarg, "f16"))
                o.fallback = NF_FALLBACK_F16;
            else if (!strcmp(optarg, "bf16"))
                o.fallback = NF_FALLBACK_BF16;
            else if (!strcmp(optarg, "q8_0"))
                o.fallback = NF_FALLBACK_Q8_0;
            else
                return nf_usage_error("bad --fallback '%s' (f32, f16, bf16 or q8_0)", optarg);
            break;
        case O_NOTOK: o.no_tokenizer = true; break;
        case O_DTYPE:
            if (strcmp(optarg, "bf16") && strcmp(optarg, "f32"))
                return nf_usage_error("bad --dtype '%s' (bf16 or f32)", optarg);
            o.dtype_f32 = !strcmp(optarg, "f32");
            break;
        case O_SHARD:
            if (nf_size_opt("--max-shard-size", optarg, false, &v))
                return NF_EXIT_USAGE;
            o.max_shard_bytes = v;
            break;
        case O_COMP:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            free(comp_arg);
            comp_arg = strdup(optarg);
            n_comps = 0;
            for (char *s = comp_arg ? strtok(comp_arg, ",") : NULL; s && n_comps < 64;
                 s = strtok(NULL, ","))
                comps[n_comps++] = s;
            break;
        case O_DROP: o.drop = true; break;
        case O_VERIFY: o.verify = true; break;
        case O_JSON: cl.json = true; break;
        case O_PROGRESS: progress = 1; break;
        case 'q': cl.quiet = true; progress = -1; break;
        case O_NOSYNC: o.sync = false; break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            oo.max_json_bytes = v;
            break;
        case 'h': fputs(usage, stdout); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: return nf_bad_option(argc, argv, lo);
        }
    }
    if (!fmt)
        return nf_usage_error("say --gguf or --safetensors");
    if (optind + 1 != argc)
        return nf_usage_error(optind >= argc ? "no artifact given" : "one artifact at a time");
    if (fmt == O_ST && (!o.out || !strcmp(o.out, "-")))
        return nf_usage_error("--safetensors writes a directory: give it with -o DIR");
    if (fmt == O_GGUF && (o.dtype_f32 || o.max_shard_bytes))
        return nf_usage_error("--dtype and --max-shard-size are for --safetensors");
    if (fmt == O_ST && (o.fallback || o.no_tokenizer))
        return nf_usage_error("--fallback and --no-tokenizer are for --gguf");
    bool to_stdout = fmt == O_GGUF && (!o.out || !strcmp(o.out, "-"));
    if (to_stdout && cl.json)
        return nf_usage_error("--json prints on standard output: write the GGUF with -o FILE");
    if (to_stdout && isatty(1))
        return nf_usage_error("refusing to write binary data to a terminal (redirect it)");
    const char *path = argv[optind];
    if (!strcmp(path, "-"))
        return nf_usage_error("an export reads the artifact's objects out of order: give its "
                              "file, not a stream");
    o.components = n_comps ? comps : NULL;
    o.n_components = n_comps;
    cl.out = to_stdout ? NF_STDOUT_NAME : o.out;
    if (cl.json)
        cl.lossy = nf_jnew_array();
    o.warn = warn;
    o.warn_ctx = &cl;
    o.lossy = lossy;
    o.lossy_ctx = &cl;
    nf_diags d = NF_DIAGS_INIT;
    d.file = path;
    nf_operand op;
    nf_export_result r = {0};
    int rc = -1;
    if (nf_operand_open(&op, path, &oo, &d) == 0) {
        if (nf_diags_exit(&d) == 0) {
            size_t nf = 0;
            const nf_catalog *cat = nf_artifact_catalog(op.a);
            const char **inputs = calloc(cat->n_files + 1, sizeof *inputs);
            for (size_t i = 0; inputs && i < cat->n_files; i++)
                inputs[nf++] = nf_artifact_file_path(op.a, i);
            o.a = op.a;
            o.inputs = inputs;
            o.n_inputs = nf;
            nf_progress pr;
            nf_progress_init(&pr, "exporting", 0, progress);
            o.progress = nf_progress_update;
            o.progress_ctx = &pr;
            rc = fmt == O_GGUF ? nf_export_gguf(&o, &r, &d) : nf_export_safetensors(&o, &r, &d);
            nf_progress_done(&pr);
            free(inputs);
        }
        nf_operand_close(&op);
    }
    if (rc == 0 && r.n_changed && !cl.quiet && !cl.json) {
        fprintf(stderr, "%s: ", nf_prog);
        nf_fput_text(cl.out, stderr);
        fprintf(stderr, ": regenerated: %zu tensor%s differ from the source GGUF (\"", r.n_changed,
                r.n_changed == 1 ? "" : "s");
        nf_fput_text(r.changed[0], stderr);
        fprintf(stderr, "\"%s)\n", r.n_changed > 1 ? " and others" : "");
    }
    int ex = nf_diags_exit(&d);
    if (cl.json) {
        nf_jval *j = nf_jnew_object();
        nf_jobj_set(j, "file", nf_jnew_string(path));
        nf_jobj_set(j, "exit", nf_jnew_u64((uint64_t)ex));
        nf_jobj_set(j, "diagnostics", nf_diags_json(&d));
        nf_jobj_set(j, "format", nf_jnew_string(fmt == O_GGUF ? "gguf" : "safetensors"));
        nf_jobj_set(j, "output", nf_jnew_string(o.out));
        if (rc == 0) {
            if (fmt == O_GGUF) {
                nf_jobj_set(j, "from_gguf", nf_jnew_bool(r.from_gguf));
                nf_jobj_set(j, "identical", nf_jnew_bool(r.identical));
                nf_jobj_set(j, "changed", names_json(r.changed, r.n_changed));
            } else {
                nf_jobj_set(j, "files", names_json(r.files, r.n_files));
            }
            nf_jobj_set(j, "tensors", nf_jnew_u64(r.tensors));
            nf_jobj_set(j, "bytes", nf_jnew_u64(r.bytes));
            nf_jobj_set(j, "copied_bytes", nf_jnew_u64(r.copied));
            nf_jobj_set(j, "lossy", cl.lossy);
            cl.lossy = NULL;
        }
        nf_print_json_line(j);
        nf_jval_free(j);
    } else {
        nf_diags_print(&d, nf_prog, stderr);
    }
    nf_jval_free(cl.lossy);
    nf_export_result_free(&r);
    nf_diags_free(&d);
    free(comp_arg);
    return nf_stdout_close(ex);
}
