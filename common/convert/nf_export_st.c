/* nf_export_st.c — artifacts to Hugging Face checkpoint directories. */
#include "nf_export_int.h"

int nf_export_safetensors(const nf_export_opts *o, nf_export_result *r, nf_diags *d)
{
    (void)o;
    (void)r;
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "not yet");
    return -1;
}
