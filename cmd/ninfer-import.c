/* ninfer-import — a checkpoint to a manifest with logical names. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_cli.h"
#include "nf_import.h"
#include "nf_io.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-import [OPTIONS] CHECKPOINT\n"
    "Print the manifest of a checkpoint (see ninfer-import(1)) that ninfer-pack\n"
    "packs as it is: logical parameter names of the architecture, one use per\n"
    "projection (A16Only), the config, frontend files as resources and the\n"
    "source files with their SHA-256 in provenance.\n"
    "CHECKPOINT is a Hugging Face directory (config.json + model.safetensors or\n"
    "a sharded model.safetensors.index.json), a .safetensors file (with\n"
    "--config, or a config.json beside it), or a .gguf file: F32/BF16 tensors\n"
    "as fp32/bf16, llama.cpp block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,\n"
    "MXFP4, Q2_K..Q6_K, IQ4_XS) and F16 matrices kept as their gguf_* formats\n"
    "(ninfer-formats(7)), or a vocabulary only.\n"
    "\n"
    "  -o, --output FILE       write the manifest to FILE (default: stdout); an\n"
    "                          existing file is kept unless --force, a missing\n"
    "                          directory is made\n"
    "      --force             replace an existing output file\n"
    "      --config FILE       the config.json to use\n"
    "      --fuse              stack Q/K/(gate)/V, MLP gate/up and expert banks into\n"
    "                          one parent each, bound by row ranges\n"
    "      --f16-as FORMAT     F16 tensors as fp32 (lossless) or bf16; default: GGUF\n"
    "                          matrices gguf_f16 (their bytes), everything else fp32\n"
    "  -q, --quiet             no warnings\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the checkpoint breaks a rule (a tensor missing or of the\n"
    "wrong shape), 2 usage, 3 I/O error (a missing shard), 4 unsupported (an unknown\n"
    "architecture, a GGUF type of the later wave such as IQ2_XXS or TQ1_0, or not\n"
    "a weight type such as Q8_K); an existing output without --force is an I/O\n"
    "error (3), an output that is a directory a usage error (2).\n";

static void warn(void *ctx, const char *msg)
{
    if (*(bool *)ctx)
        return;
    fprintf(stderr, "%s: ", nf_prog);
    nf_fput_text(msg, stderr);
    fputc('\n', stderr);
}

int main(int argc, char **argv)
{
    enum { O_CONFIG = 256, O_FUSE, O_F16, O_VERSION, O_FORCE };
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'},
        {"force", no_argument, 0, O_FORCE},
        {"config", required_argument, 0, O_CONFIG},
        {"fuse", no_argument, 0, O_FUSE},
        {"f16-as", required_argument, 0, O_F16},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-import";
    nf_import_opts o = {0};
    o.f16_as = NF_FMT_UNKNOWN; /* GGUF matrices: gguf_f16; everything else: fp32 */
    const char *out = NULL;
    bool quiet = false;
    int c;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_FORCE: o.force = true; break;
        case O_FUSE: o.fuse = true; break;
        case O_F16:
            if (strcmp(optarg, "fp32") == 0)
                o.f16_as = NF_FMT_FP32;
            else if (strcmp(optarg, "bf16") == 0)
                o.f16_as = NF_FMT_BF16;
            else
                return nf_usage_error("bad --f16-as '%s' (fp32 or bf16)", optarg);
            break;
        case O_CONFIG:
            if (!*optarg)
                return nf_usage_error("--config '': give the config.json to use");
            o.config = optarg;
            break;
        case 'q': quiet = true; break;
        case 'h': fputs(usage, stdout); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: return nf_bad_option(argc, argv, lo);
        }
    }
    if (optind + 1 != argc)
        return nf_usage_error(optind >= argc ? "no checkpoint given" : "one checkpoint at a time");
    if (out && strcmp(out, "-") == 0)
        out = NULL;
    o.checkpoint = argv[optind];
    o.output = out;
    o.warn = warn;
    o.warn_ctx = &quiet;
    nf_diags d = NF_DIAGS_INIT;
    d.file = o.checkpoint;
    size_t len = 0;
    /* the output is checked before any work: nothing is written when it
     * would be refused (DESIGN 3; the manifest is the only file an import
     * writes: no side files). Here what the
     * path is (a directory is usage); the importer compares it with every
     * file it reads (usage), then checks that it does not exist unless
     * --force (io), before it hashes or writes anything */
    const char *inputs[2] = {o.checkpoint, o.config};
    char *text = NULL;
    if (!out || nf_output_file_check(out, true, inputs, 2, &d) == 0)
        text = nf_import(&o, &len, &d);
    if (text) {
        int rc = 0;
        if (out)
            nf_write_file(out, text, len, o.force, inputs, 2, &d);
        else if ((rc = nf_write_all(1, text, len)) != 0)
            nf_diag_stdout(&d, -rc);
    }
    free(text);
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
