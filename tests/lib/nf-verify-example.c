/* nf-verify-example — what an engine or a CI job links to check a download
 * through the installed library alone: `#include <nf_verify.h>`, libninfer.a,
 * ninfer.pc (tests/library.bats builds it against a staged `make install`).
 * It prints what `ninfer-verify -q ARTIFACT` prints and exits as it does. */
#include <stdio.h>
#include <stdlib.h>

#include "nf_artifact.h"
#include "nf_verify.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: nf-verify-example ARTIFACT\n");
        return 2;
    }
    nf_diags d = NF_DIAGS_INIT;
    d.file = argv[1];
    nf_open_opts oo = {.check_fill = true};
    nf_artifact *a = nf_artifact_open(argv[1], &oo, &d);
    if (a) {
        nf_verify_result r;
        nf_verify(a, NULL, &r, &d);
        nf_verify_result_free(&r);
        nf_artifact_close(a);
    }
    /* the library builds each line; printing it is ours */
    for (size_t i = 0; i <= d.n; i++) {
        char *line = nf_diag_line(&d, i, "ninfer-verify");
        if (line)
            fprintf(stderr, "%s\n", line);
        free(line);
    }
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return ex;
}
