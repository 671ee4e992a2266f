/* ninfer-quant — choose formats, layouts and activation policies in a manifest. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_cli.h"
#include "nf_quant.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-quant [OPTIONS] [RULE...] < MANIFEST > MANIFEST\n"
    "Choose the encoding of logical parameters in a manifest (ninfer-pack(1)).\n"
    "A RULE is GLOB=FORMAT[:LAYOUT][,divisors=N][,policy=P], e.g.\n"
    "  'text/layers/*/mlp/*=q4_g64_fp16'   'text/head=nvfp4,policy=AllowA4'\n"
    "The glob matches logical parameter names with fnmatch(3) ('*' crosses '/');\n"
    "the last matching rule wins; only rank-2 parameters (matrices) are changed.\n"
    "The rule goes to the object the parameter is bound to; a policy goes to the\n"
    "parameter's uses; AllowA4 on nvfp4 adds an activation_input_divisor (an fp32\n"
    "scalar of 1.0) to each of its uses. The packer then transcodes.\n"
    "\n"
    "  -r, --recipe FILE     rules as JSON: {\"rules\": [{\"match\", \"format\", \"layout\",\n"
    "                        \"divisors\", \"activation_policy\"}]} (before RULE args)\n"
    "  -i, --input FILE      read the manifest from FILE instead of stdin\n"
    "  -o, --output FILE     write the manifest to FILE instead of stdout (an\n"
    "                        existing file is kept unless --force; a missing\n"
    "                        directory is made)\n"
    "      --force           replace an existing output file\n"
    "      --allow-unmatched a rule that matches no parameter is no error\n"
    "      --max-json-bytes N  refuse manifests larger than N (default 256M)\n"
    "  -h, --help            this text\n"
    "      --version         print the version\n"
    "\n"
    "Formats: bf16 fp32 int32 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16\n"
    "q8_g32_fp16 t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16 (see ninfer-formats(7)).\n"
    "Exit status: 0 ok, 1 the manifest breaks a rule or a parameter cannot take\n"
    "its encoding, 2 usage (also a rule that matches no parameter), 3 I/O error\n"
    "(also an existing output without --force), 4 unsupported (a gguf_* target:\n"
    "the toolkit does not quantize into GGUF's formats).\n";

/* The manifest on fd, at most cap bytes (more is refused: `header`, as
 * ninfer-pack). NULL with a diagnostic. */
static char *read_manifest(int fd, uint64_t cap, size_t *len, nf_diags *d)
{
    char *t = NULL;
    int rc = nf_read_all(fd, cap, &t, len);
    const char *hint = t && *len >= 9 ? nf_not_manifest_hint(t, *len) : NULL;
    if (hint && (rc == 0 || rc == -EFBIG))
        nf_diag_add(d, NF_C_JSON, "", "not JSON: %s", hint);
    else if (rc == -EFBIG)
        nf_diag_add(d, NF_C_HEADER, "", "manifest is larger than %llu bytes (--max-json-bytes)",
                    (unsigned long long)cap);
    else if (rc < 0)
        nf_diag_add(d, NF_C_IO, "", "cannot read the manifest: %s", strerror(-rc));
    if (rc < 0 || hint) {
        free(t);
        return NULL;
    }
    return t;
}

int main(int argc, char **argv)
{
    enum { O_VERSION = 256, O_FORCE, O_UNMATCHED, O_MAXJ };
    static const struct option lo[] = {
        {"recipe", required_argument, 0, 'r'},
        {"force", no_argument, 0, O_FORCE},
        {"allow-unmatched", no_argument, 0, O_UNMATCHED},
        {"input", required_argument, 0, 'i'},
        {"output", required_argument, 0, 'o'},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-quant";
    const char *recipe = NULL, *in = NULL, *outp = NULL;
    bool force = false, allow_unmatched = false;
    uint64_t maxj = NF_DEFAULT_MAX_JSON;
    int c;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "r:i:o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'r': recipe = optarg; break;
        case 'i': in = optarg; break;
        case 'o': outp = optarg; break;
        case O_FORCE: force = true; break;
        case O_UNMATCHED: allow_unmatched = true; break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &maxj))
                return NF_EXIT_USAGE;
            break;
        case 'h': fputs(usage, stdout); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: return nf_bad_option(argc, argv, lo);
        }
    }
    if (outp && strcmp(outp, "-") == 0)
        outp = NULL;
    if (in && strcmp(in, "-") == 0)
        in = NULL;
    nf_diags d = NF_DIAGS_INIT;
    nf_quant_rules rules = {0};
    rules.allow_unmatched = allow_unmatched;
    /* the output is checked before any work (DESIGN 3: one rule for all) */
    const char *inputs[2] = {in ? in : "-", recipe};
    if (outp)
        nf_output_file_check(outp, force, inputs, 2, &d);
    else
        nf_stdout_check(inputs, 2, &d);
    if (recipe) {
        size_t len = 0;
        char *t = NULL;
        /* a recipe is small: the manifest's cap bounds it too */
        int rc = nf_read_path(recipe, false, maxj, &t, &len);
        d.file = recipe;
        if (rc < 0)
            nf_diag_add(&d, NF_C_IO, "", "cannot read: %s",
                        rc == -EFBIG ? "larger than --max-json-bytes" : strerror(-rc));
        else
            nf_quant_recipe_parse(t, len, &rules, &d);
        free(t);
    }
    d.file = NULL;
    for (int i = optind; i < argc && !nf_diags_exit(&d); i++)
        nf_quant_rule_parse(argv[i], &rules, &d);
    if (!nf_diags_exit(&d) && rules.n == 0)
        nf_diag_add(&d, NF_C_USAGE, "", "no rules given (see '%s --help')", nf_prog);
    if (!nf_diags_exit(&d)) {
        d.file = in ? in : "-";
        int fd = in ? open(in, O_RDONLY | O_CLOEXEC | O_NOCTTY) : 0;
        size_t len = 0;
        char *t = NULL;
        if (fd < 0)
            nf_diag_add(&d, NF_C_IO, "", "cannot open: %s", strerror(errno));
        else
            t = read_manifest(fd, maxj, &len, &d);
        if (fd > 0)
            close(fd);
        /* the catalog keeps the text (and frees it) */
        nf_catalog *cat = t ? nf_catalog_parse_owned(t, len, NF_CAT_MANIFEST, NULL, &d) : NULL;
        if (cat && !nf_diags_exit(&d) && nf_quant_apply(cat, &rules, &d) == 0) {
            nf_serialize_opts so = {0};
            so.manifest = true;
            so.pretty = true;
            size_t n = 0;
            int wr;
            char *o = nf_catalog_serialize(cat, &so, &n);
            char *on = o ? realloc(o, n + 1) : NULL;
            if (on) {
                o = on;
                o[n++] = '\n';
            }
            if (!on)
                nf_diag_addf(&d, NF_C_IO, outp ? outp : "-", "", "out of memory");
            else if (outp)
                nf_write_file(outp, o, n, force, inputs, 2, &d);
            else if ((wr = nf_write_all(1, o, n)) != 0)
                nf_diag_stdout(&d, -wr);
            free(o);
        }
        nf_catalog_free(cat);
    }
    nf_quant_rules_free(&rules);
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
