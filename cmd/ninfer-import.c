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
    "--config), or a .gguf file (F32/F16/BF16 tensors, or vocabulary only).\n"
    "\n"
    "  -o, --output FILE       write the manifest to FILE (default: stdout)\n"
    "      --config FILE       the config.json to use\n"
    "      --fuse              stack Q/K/(gate)/V, MLP gate/up and expert banks into\n"
    "                          one parent each, bound by row ranges\n"
    "      --f16-as FORMAT     F16 tensors as fp32 (lossless) or bf16; default: GGUF matrices\n"
    "                          gguf_f16 (their bytes), everything else fp32\n"
    "      --resource-dir DIR  where generated resources (a GGUF's gguf_tokenizer.json)\n"
    "                          are written (default: FILE's directory, else .)\n"
    "  -q, --quiet             no warnings\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the checkpoint breaks a rule (a tensor missing or of the\n"
    "wrong shape), 2 usage, 3 I/O error (a missing shard), 4 unsupported (an unknown\n"
    "architecture, a quantized GGUF tensor type).\n";

static void warn(void *ctx, const char *msg)
{
    if (!*(bool *)ctx)
        fprintf(stderr, "%s: %s\n", nf_prog, msg);
}

/* Write text to path through a temporary beside it. Returns 0 or -errno. */
static int write_file(const char *path, const char *text, size_t len)
{
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp-%d", path, (int)getpid()) < 0)
        return -ENOMEM;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -errno : nf_write_all(fd, text, len);
    if (fd >= 0 && close(fd) != 0 && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path) != 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    free(tmp);
    return rc;
}

int main(int argc, char **argv)
{
    enum { O_CONFIG = 256, O_FUSE, O_F16, O_RESDIR, O_VERSION };
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'},
        {"config", required_argument, 0, O_CONFIG},
        {"fuse", no_argument, 0, O_FUSE},
        {"f16-as", required_argument, 0, O_F16},
        {"resource-dir", required_argument, 0, O_RESDIR},
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
    while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_CONFIG: o.config = optarg; break;
        case O_FUSE: o.fuse = true; break;
        case O_F16:
            if (strcmp(optarg, "fp32") == 0)
                o.f16_as = NF_FMT_FP32;
            else if (strcmp(optarg, "bf16") == 0)
                o.f16_as = NF_FMT_BF16;
            else
                return nf_usage_error("bad --f16-as '%s' (fp32 or bf16)", optarg);
            break;
        case O_RESDIR: o.resource_dir = optarg; break;
        case 'q': quiet = true; break;
        case 'h': fputs(usage, stdout); return 0;
        case O_VERSION: nf_print_version(); return 0;
        default: return nf_usage_error("unknown option (see --help)");
        }
    }
    if (optind + 1 != argc)
        return nf_usage_error(optind >= argc ? "no checkpoint given" : "one checkpoint at a time");
    if (out && strcmp(out, "-") == 0)
        out = NULL;
    o.checkpoint = argv[optind];
    o.warn = warn;
    o.warn_ctx = &quiet;
    char *dir = NULL;
    if (!o.resource_dir)
        o.resource_dir = out ? (dir = nf_dirname_dup(out)) : ".";
    nf_diags d = NF_DIAGS_INIT;
    d.file = o.checkpoint;
    size_t len = 0;
    char *text = nf_import(&o, &len, &d);
    if (text) {
        int rc = 0;
        if (out) {
            rc = write_file(out, text, len);
            if (rc)
                nf_diag_addf(&d, NF_C_IO, out, "", "cannot write: %s", strerror(-rc));
        } else if (nf_write_all(1, text, len) != 0) {
            nf_diag_addf(&d, NF_C_IO, "(stdout)", "", "cannot write: %s", strerror(errno));
        }
    }
    free(text);
    free(dir);
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return ex;
}
