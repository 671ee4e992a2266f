/* nf_catalog.h — the JSON catalog of an artifact (spec 4, 5, 7, 8, 9.2,
 * 3.3) and of a manifest (ninfer-pack(1) MANIFEST), parsed and validated
 * into plain C records, and serialized back.
 *
 * Parsing checks every generic rule of spec 11.1 (and ninfer(5) JSON rules):
 * field sets and types, U64 fields, IDs, the files table, object order,
 * uniqueness, overlap, alignment and bounds, `bytes` equal to the encoded
 * size of every known format/layout, references of bindings, uses,
 * resources and targets, part ranges, proposal records and the shape of
 * metadata.integrity. Every problem found is a diagnostic with its JSON
 * Pointer; parsing goes on after a problem wherever the rest can still be
 * checked, so one run reports all it can.
 *
 * Ownership: the catalog owns every string in it. config, metadata (less
 * integrity) and provenance are kept as spans of the catalog text and
 * written back byte for byte (ninfer(5) JSON rules).
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

struct nf_source; /* a manifest object's source: nf_source.h (ninfer-pack(1)) */

/* Ownership of every record below: the catalog owns all of it. Strings,
 * shapes, parts, auxiliaries and resource lists live in the catalog's arena
 * (one bump allocator freed with the catalog): never free or realloc them,
 * and change them only through the nf_object_set_* / nf_use_* functions
 * below. Strings are NUL-terminated (IDs hold no U+0000, ninfer(5)). Equal
 * strings may share storage: a use's `parameter` is its binding's name, a
 * reference is the referenced object's ID, format/layout/encoding names,
 * inputs and roles are interned. Record arrays (objects, bindings, ...) may
 * move when records are added (nf_catalog_add_tensor): hold indices, not
 * pointers, across additions. */

typedef struct {
    char *id;
    nf_obj_kind kind;
    /* tensor */
    unsigned rank;
    uint64_t *dims;     /* rank entries (never NULL, also for rank 0) */
    char *format_name, *layout_name;
    nf_format format;   /* NF_FMT_UNKNOWN for names this build does not know */
    nf_layout layout;
    uint64_t divisors;  /* 1 when absent */
    nf_enc_status enc_status; /* of nf_encoding_compute on the fields above;
                                 nf_object_encoding gives the planes */
    bool has_divisors;
    /* both */
    bool has_offset, has_bytes;
    /* metadata.integrity.sha256[id] as 32 raw bytes (ninfer(5) Object digests);
     * nf_object_digest_hex / nf_object_set_digest_hex convert */
    bool has_digest;
    uint8_t digest[32];
    uint64_t elements;  /* elements(shape) (spec 1) when the shape is valid, else 0 */
    /* resource */
    char *encoding_name;
    uint64_t offset, bytes;
    /* manifest only */
    bool bytes_given;   /* `bytes` was written in the manifest */
    struct nf_source *source; /* NULL when absent (nf_source_parse's tree, owned) */
    char *source_raw;   /* the source as JSON text, written back by manifest
                           serialization (ninfer-quant passes sources on) */
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
    size_t component;    /* index of the component owning the name
                            (nf_catalog_owner), SIZE_MAX when none */
} nf_named_binding;

typedef struct {
    char *role;          /* free string */
    nf_binding b;
} nf_aux;

typedef struct {
    char *parameter, *input;
    char *activation_policy; /* NULL when absent; else A16Only/AllowA8/AllowA4 */
    nf_aux *aux;
    size_t n_aux;
    size_t binding;      /* index of the binding named `parameter`, SIZE_MAX
                            when there is none (a `reference` error) */
} nf_use;

typedef struct {
    char *role;
    char *object;        /* resource object ID */
    size_t obj;
} nf_resource_ref;

typedef struct {
    char *id;
    /* config: its JSON text exactly as written, config_text[0..config_len)
     * (NOT NUL-terminated: a span of the catalog's text; "{}" when the
     * catalog lacks one). Parse it with nf_jdoc_parse when its values are
     * needed (the cost guard applies to it alone). */
    const char *config_text;
    size_t config_len;
    char *target;        /* NULL when absent */
    size_t target_index; /* index of the target component, SIZE_MAX when
                            absent or unresolved */
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

struct nf_catalog_index; /* lookups; see nf_catalog_find and friends */
struct nf_arena;

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
    /* Open members as written (spans, NOT NUL-terminated): the metadata
     * object with all its members (integrity included; serialization leaves
     * integrity out and writes its own) and the provenance object. NULL/0
     * when absent. */
    const char *metadata_text;
    size_t metadata_len;
    const char *provenance_text;
    size_t provenance_len;
    uint64_t payload_bytes;    /* sum of files[].payload_bytes */
    /* private */
    struct nf_catalog_index *ix;
    struct nf_arena *arena;
    char *text;                /* the catalog text the spans point into */
    size_t text_len;
    char *own_provenance;      /* nf_catalog_set_provenance's text */
    size_t objects_cap;        /* objects allocated (>= n_objects) */
} nf_catalog;

typedef enum {
    NF_CAT_ARTIFACT = 0, /* a stored catalog: every field as spec 4 requires */
    NF_CAT_MANIFEST = 1, /* ninfer-pack(1) MANIFEST: files/offset/bytes
                            optional, `source` allowed */
} nf_cat_mode;

/* Parse and validate a catalog from JSON text[0..len) (spec 11.1 items
 * 1, 3 and 4, plus the files table of item 2 without file lengths) in one
 * pass of the strict scanner (nf_jscan.h): the record arrays go
 * into compact records, config/metadata/provenance stay text spans. Time
 * is linear in len; memory, beyond the text, is a small multiple of the
 * records (about 150 bytes per object, 50 per binding and per use, plus
 * the strings), whatever the text holds: no catalog is refused for what
 * parsing it costs. Returns the catalog (possibly with problems recorded
 * in d: check nf_diags_exit) or NULL when the text is not even a JSON
 * object to read from (d says why). entry_name, when not NULL, is the
 * entry's file name, which no part path may equal (spec 3.3). The text is
 * copied (see nf_catalog_parse_owned to hand a buffer over instead). */
nf_catalog *nf_catalog_parse(const char *text, size_t len, nf_cat_mode mode,
                             const char *entry_name, nf_diags *d);

/* The same, taking ownership of the malloc'ed buffer text[0..len): the
 * catalog keeps it (nf_catalog_text gives it back, unchanged) and frees it
 * with itself; on a NULL return it is freed at once. */
nf_catalog *nf_catalog_parse_owned(char *text, size_t len, nf_cat_mode mode,
                                   const char *entry_name, nf_diags *d);

/* The catalog text as parsed, byte for byte (len: its length). */
const char *nf_catalog_text(const nf_catalog *c, size_t *len);

void nf_catalog_free(nf_catalog *c);

/* ---- lookups (resolved once, when the catalog is parsed) ---------------
 * Every lookup is O(1) expected (keyed hashes, so chosen names cannot make
 * them slow) and returns SIZE_MAX when nothing matches or the argument is
 * NULL. With duplicates (a `duplicate-id` or `duplicate-use` problem) the
 * first record wins, as references resolve. */

/* Index of the object with this ID. */
size_t nf_catalog_find(const nf_catalog *c, const char *id);

/* Index of the first object whose bytes end past logical offset off (the
 * first that holds byte off or starts after it), or n_objects when none
 * does. Objects lie in offset order without overlap (spec 5.3), so this is
 * a binary search, O(log objects); over a catalog with an `order` or
 * `overlap` problem the index is some index in [0, n_objects]. */
size_t nf_catalog_object_after(const nf_catalog *c, uint64_t off);

/* Index of the binding of this logical parameter name. */
size_t nf_catalog_binding(const nf_catalog *c, const char *name);

/* Index of the component with this ID. */
size_t nf_catalog_component(const nf_catalog *c, const char *id);

/* The ID of the main model's component (spec 4.2): the one a selection
 * defaults to, and the only one that may have a proposal (spec 9.2). */
#define NF_TEXT_COMPONENT "text"

/* The component owning a logical name (spec 4.2, 9.2; ninfer-run(1)) -- the one
 * home of this rule, used by the binder, the selection and the commands:
 * the component whose ID is the name's first segment ("text" for
 * "text/layers/0/..."); a root "proposal/..." name (spec 9.2) is the text
 * component's when that component has a proposal, and nobody's otherwise.
 * Returns an index into c->components, or SIZE_MAX when no component owns
 * the name (no '/', a first segment that is no component ID, a proposal
 * name without text.proposal, name or c NULL). O(1). Bindings carry theirs
 * in nf_named_binding.component (the same answer, resolved at parse). */
size_t nf_catalog_owner(const nf_catalog *c, const char *name);

/* The uses of binding b (an index into bindings), in catalog order: *n of
 * them, indices into uses (NULL and 0 when none). Valid until the uses
 * change. */
const size_t *nf_catalog_uses_of(const nf_catalog *c, size_t b, size_t *n);

/* Index of the use (parameter, input), or SIZE_MAX. */
size_t nf_catalog_use(const nf_catalog *c, const char *parameter, const char *input);

/* The planes and encoded size of tensor object o (ninfer-formats(7)), computed
 * from its format, layout, shape and divisors: returns o->enc_status, and
 * fills *out when that is NF_ENC_OK. O(1). */
nf_enc_status nf_object_encoding(const nf_object *o, nf_encoding *out);

/* The object's digest as 64 lowercase hex digits and a NUL ("" when it has
 * none). */
void nf_object_digest_hex(const nf_object *o, char hex[65]);

/* Set the digest from 64 hex digits (either case); false (and nothing
 * changes) when hex is not that. */
bool nf_object_set_digest_hex(nf_object *o, const char *hex);

/* Manifest layout (ninfer-pack(1)): compute missing tensor bytes (encoded size)
 * and lay out objects without offsets in array order after the previous
 * object's end, tensors at 256-byte alignment and resources at 1; resource
 * bytes must be known by then. Sets payload_bytes to the end of the last
 * object. Checks order/overlap/alignment again. Returns 0, or -1 with
 * diagnostics. */
int nf_catalog_layout(nf_catalog *c, nf_diags *d);

/* Serialize to JSON text (straight to text, no tree). files:
 * the files table to write (may be the catalog's own); digests: write
 * metadata.integrity from the objects' digests (objects without one are
 * left out); manifest: write the manifest form (no offsets, no files, no
 * integrity; tensor bytes left out, resource bytes kept where the manifest
 * gave them; each object's source_raw, or with artifact_path set
 * {"artifact": artifact_path, "object": ID}); pretty: two-space indents.
 * The text is json-c's form of the same document (compact, or pretty as
 * JSON_C_TO_STRING_PRETTY|SPACED), with config, metadata values,
 * provenance and sources copied as read, numbers included: serializing
 * a catalog this wrote and parsed again gives the same bytes. Memory: the
 * text, exactly (a counting pass sizes it). Returns malloc'ed text and its
 * length, or NULL on allocation failure. */
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

/* The length nf_catalog_serialize would give, without writing anything
 * (for planning a files table). SIZE_MAX on allocation failure. */
size_t nf_catalog_serialized_len(const nf_catalog *c, const nf_serialize_opts *o);

/* Serialize into buf[0..cap) (no NUL added): returns the length, or
 * SIZE_MAX when the text needs more than cap bytes (nothing useful in buf)
 * or on allocation failure. For writers that place the catalog in a buffer
 * of their own (the entry's first bytes). */
size_t nf_catalog_serialize_to(const nf_catalog *c, const nf_serialize_opts *o, char *buf,
                               size_t cap);

/* ---- editing (manifests: ninfer-quant) ---- */

/* Append a tensor object (manifest editing, e.g. ninfer-quant's auxiliary
 * scalars): id, shape, format/layout names and the source as JSON text are
 * copied; the encoding is computed. Returns the new index or SIZE_MAX (an
 * ID already in use, rank above NF_MAX_RANK, or out of memory). */
size_t nf_catalog_add_tensor(nf_catalog *c, const char *id, const uint64_t *dims,
                             unsigned rank, const char *format, const char *layout,
                             const char *source_json);

/* Give tensor object i a new encoding: format and layout names (copied),
 * divisors (0: absent, i.e. 1). Recomputes format/layout/enc_status and
 * sets bytes to the encoded size (has_bytes), drops the digest. Returns
 * false when out of memory. */
bool nf_object_set_encoding(nf_catalog *c, size_t i, const char *format, const char *layout,
                            uint64_t divisors);

/* Set (policy != NULL, copied) or remove a use's activation_policy. False
 * when out of memory. */
bool nf_use_set_policy(nf_catalog *c, nf_use *u, const char *policy);

/* Add an auxiliary input (spec 8) binding the whole object obj_id under
 * role to use u. Returns false on allocation failure or when the role is
 * already there. */
bool nf_use_add_aux(nf_catalog *c, nf_use *u, const char *role, const char *obj_id, size_t obj);

/* Remove the auxiliary under role from use u (ninfer-quant folding an
 * input_columns into its object). False when the use has none. */
bool nf_use_remove_aux(nf_catalog *c, nf_use *u, const char *role);

/* Replace tensor object i's manifest source text (what manifest
 * serialization writes; the parsed `source` tree keeps the old source, so
 * a packer re-reads the manifest). False when out of memory. */
bool nf_object_set_source_raw(nf_catalog *c, size_t i, const char *source_json);

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
