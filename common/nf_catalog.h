/* nf_catalog.h — the JSON catalog of an artifact (spec 4, 5, 7, 8, 9.2,
 * 3.3) and of a manifest (DESIGN 5), parsed and validated into plain C
 * records, and serialized back.
 *
 * Parsing checks every generic rule of spec 11.1 (and DESIGN 3 and 13):
 * field sets and types, U64 fields, IDs, the files table, object order,
 * uniqueness, overlap, alignment and bounds, `bytes` equal to the encoded
 * size of every known format/layout, references of bindings, uses,
 * resources and targets, part ranges, proposal records and the shape of
 * metadata.integrity. Every problem found is a diagnostic with its JSON
 * Pointer; parsing goes on after a problem wherever the rest can still be
 * checked, so one run reports all it can.
 *
 * Ownership: the catalog owns every string in it. config, metadata (less
 * integrity) and provenance are kept as raw JSON text and written back
 * byte for byte.
 */
#ifndef NF_CATALOG_H
#define NF_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_diag.h"
#include "nf_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { NF_OBJ_TENSOR, NF_OBJ_RESOURCE } nf_obj_kind;

/* Where a manifest object's values come from (DESIGN 5). Never written to
 * an artifact. */
typedef enum {
    NF_SRC_NONE = 0,
    NF_SRC_FILE,        /* {"file": PATH, "offset": N, "dtype": T} */
    NF_SRC_VALUES,      /* {"values": [NUMBER...], "dtype": T} */
    NF_SRC_SAFETENSORS, /* {"safetensors": PATH, "tensor": NAME} */
    NF_SRC_GGUF,        /* {"gguf": PATH, "tensor": NAME} */
    NF_SRC_ARTIFACT,    /* {"artifact": PATH, "object": ID} */
    NF_SRC_CONCAT,      /* {"concat": [SOURCE...]} */
} nf_src_kind;

typedef struct nf_source {
    nf_src_kind kind;
    char *path;      /* file / safetensors / gguf / artifact path (as written) */
    char *name;      /* tensor name or object ID */
    char *dtype;     /* NULL: bytes already in the object's encoding */
    uint64_t offset; /* file: byte offset, default 0 */
    double *values;  /* values: n_values numbers */
    size_t n_values;
    struct nf_source *items; /* concat: n_items sources */
    size_t n_items;
    bool has_rows;
    uint64_t rows[2];        /* [begin, end) rows of a rank-2 source */
    bool has_unpermute;
    uint64_t unpermute_heads; /* scheme "llama-rope" */
    char *pointer;           /* JSON Pointer of this source (for messages) */
} nf_source;

typedef struct {
    char *id;
    nf_obj_kind kind;
    /* tensor */
    unsigned rank;
    uint64_t dims[NF_MAX_RANK];
    char *format_name, *layout_name;
    nf_format format;   /* NF_FMT_UNKNOWN for names this build does not know */
    nf_layout layout;
    uint64_t divisors;  /* 1 when absent */
    bool has_divisors;
    nf_enc_status enc_status; /* of nf_encoding_compute */
    nf_encoding enc;
    /* resource */
    char *encoding_name;
    /* both */
    uint64_t offset, bytes;
    bool has_offset, has_bytes;
    /* metadata.integrity.sha256[id], 64 lowercase hex + NUL, or "" */
    char sha256[65];
    /* manifest only */
    nf_source *source;  /* NULL when absent */
    char *source_raw;   /* the source as JSON text, written back by manifest
                           serialization (ninfer-quant passes sources on) */
    bool bytes_given;   /* `bytes` was written in the manifest */
} nf_object;

typedef struct {
    char *object;       /* tensor object ID */
    size_t obj;         /* index into objects (SIZE_MAX when unresolved) */
    uint64_t begin, end; /* logical element range [begin, end) (spec 7.1) */
} nf_part;

/* A Binding (spec 7.1): whole object (parts == NULL) or ordered parts. */
typedef struct {
    char *object;       /* whole-object form */
    size_t obj;
    nf_part *parts;
    size_t n_parts;
} nf_binding;

typedef struct {
    char *name;          /* logical parameter name */
    nf_binding b;
} nf_named_binding;

typedef struct {
    char *role;          /* free string (DESIGN 13) */
    nf_binding b;
} nf_aux;

typedef struct {
    char *parameter, *input;
    char *activation_policy; /* NULL when absent; else A16Only/AllowA8/AllowA4 */
    nf_aux *aux;
    size_t n_aux;
} nf_use;

typedef struct {
    char *role;
    char *object;        /* resource object ID */
    size_t obj;
} nf_resource_ref;

typedef struct {
    char *id;
    char *config_raw;    /* raw JSON text of config, as written */
    char *target;        /* NULL when absent */
    nf_resource_ref *resources;
    size_t n_resources;
    bool has_proposal;
    bool proposal_indexed; /* domain "indexed" (else "full") */
    bool has_rows;
    uint64_t proposal_rows;
} nf_component;

typedef struct {
    char *path;          /* NULL for the entry (files[0]) */
    uint64_t payload_bytes;
    uint64_t logical_offset; /* P_i of spec 2.2 */
} nf_file;

typedef struct {
    char *name;          /* unescaped member name */
    char *raw_value;     /* raw JSON text */
} nf_raw_member;

typedef struct nf_catalog {
    nf_component *components;
    size_t n_components;
    nf_object *objects;
    size_t n_objects;
    nf_named_binding *bindings;
    size_t n_bindings;
    nf_use *uses;
    size_t n_uses;
    nf_file *files;
    size_t n_files;
    bool has_files;
    bool has_metadata, has_provenance, has_integrity;
    nf_raw_member *metadata;   /* members other than "integrity", in order */
    size_t n_metadata;
    char *provenance_raw;      /* NULL when absent */
    uint64_t payload_bytes;    /* sum of files[].payload_bytes */
    struct nf_strmap *ids;     /* object ID -> index */
} nf_catalog;

typedef enum {
    NF_CAT_ARTIFACT = 0, /* a stored catalog: every field as spec 4 requires */
    NF_CAT_MANIFEST = 1, /* DESIGN 5: files/offset/bytes optional, `source` allowed */
} nf_cat_mode;

/* Parse and validate a catalog from JSON text[0..len) (spec 11.1 items
 * 1, 3 and 4, plus the files table of item 2 without file lengths).
 * max_json_depth 0 means 64. Returns the catalog (possibly with problems
 * recorded in d: check nf_diags_exit) or NULL when the text is not even a
 * JSON object to read from (d says why). entry_name, when not NULL, is the
 * entry's file name, which no part path may equal (spec 3.3). */
nf_catalog *nf_catalog_parse(const char *text, size_t len, nf_cat_mode mode,
                             const char *entry_name, nf_diags *d);
void nf_catalog_free(nf_catalog *c);

/* Index of the object with this ID, or SIZE_MAX. O(1) expected. */
size_t nf_catalog_find(const nf_catalog *c, const char *id);

/* Manifest layout (DESIGN 5): compute missing tensor bytes (encoded size)
 * and lay out objects without offsets in array order after the previous
 * object's end, tensors at 256-byte alignment and resources at 1; resource
 * bytes must be known by then. Sets payload_bytes to the end of the last
 * object. Checks order/overlap/alignment again. Returns 0, or -1 with
 * diagnostics. */
int nf_catalog_layout(nf_catalog *c, nf_diags *d);

/* Serialize to JSON text (compact). files: the files table to write (may be
 * the catalog's own); digests: write metadata.integrity from objects'
 * sha256 (objects without one are left out); manifest: write the manifest
 * form (no offsets, no files, no integrity; tensor bytes left out, resource
 * bytes kept where the manifest gave them; each object's source_raw, or
 * with artifact_path set {"artifact": artifact_path, "object": ID}). Returns malloc'ed text and its length, or NULL
 * on allocation failure. */
typedef struct {
    const nf_file *files;
    size_t n_files;
    bool digests;
    bool manifest;
    const char *artifact_path; /* manifest: the source artifact's path */
    bool pretty;
} nf_serialize_opts;
char *nf_catalog_serialize(const nf_catalog *c, const nf_serialize_opts *o,
                           size_t *len);

/* Append a tensor object (manifest editing, e.g. ninfer-quant's auxiliary
 * scalars): id, shape, format/layout names and the source as JSON text are
 * copied; the encoding is computed. Returns the new index or SIZE_MAX (an
 * ID already in use, or out of memory). */
size_t nf_catalog_add_tensor(nf_catalog *c, const char *id, const uint64_t *dims,
                             unsigned rank, const char *format, const char *layout,
                             const char *source_json);

/* Add an auxiliary input (spec 8) binding the whole object obj_id under
 * role to use u. Returns false on allocation failure or when the role is
 * already there. */
bool nf_use_add_aux(nf_use *u, const char *role, const char *obj_id, size_t obj);

/* Set member `name` of the provenance object to the JSON text value_json
 * (replacing a member of that name; other members keep their text).
 * Returns false on allocation failure or invalid JSON. */
bool nf_catalog_set_provenance(nf_catalog *c, const char *name, const char *value_json);

/* The element count of a binding: the object's elements (whole form) or the
 * sum of part lengths. False on overflow or unresolved reference. */
bool nf_binding_elements(const nf_catalog *c, const nf_binding *b, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
