/* nf_catalog_index.c — the catalog's arena, its lookups (DESIGN 14:
 * references resolved once) and the record editing functions. */
#include "nf_catalog_int.h"

#include <stdlib.h>
#include <string.h>

#include "nf_jscan.h"
#include "nf_util.h"

/* ---- arena ---------------------------------------------------------------- */

typedef struct nf_chunk {
    struct nf_chunk *next;
    size_t used, cap;
    _Alignas(8) unsigned char data[];
} nf_chunk;

struct nf_arena {
    nf_chunk *head;
    size_t next_cap, bytes;
};

#define ARENA_MIN (64u << 10)
#define ARENA_MAX (4u << 20)

nf_arena *nf_arena_new(void)
{
    nf_arena *a = calloc(1, sizeof *a);
    if (a)
        a->next_cap = ARENA_MIN;
    return a;
}

void nf_arena_free(nf_arena *a)
{
    if (!a)
        return;
    for (nf_chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void *nf_arena_alloc(nf_arena *a, size_t n)
{
    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + 7) & ~(size_t)7;
    nf_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        if (n > a->next_cap / 4) {
            /* a big block gets a chunk of its own, behind the current one,
             * so the current chunk's free space is not wasted */
            nf_chunk *b = malloc(sizeof *b + n);
            if (!b)
                return NULL;
            b->cap = b->used = n;
            a->bytes += n;
            if (c) {
                b->next = c->next;
                c->next = b;
            } else {
                b->next = NULL;
                a->head = b;
            }
            return b->data;
        }
        nf_chunk *nc = malloc(sizeof *nc + a->next_cap);
        if (!nc)
            return NULL;
        nc->cap = a->next_cap;
        nc->used = 0;
        nc->next = c;
        a->head = c = nc;
        a->bytes += nc->cap;
        if (a->next_cap < ARENA_MAX)
            a->next_cap *= 2;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

char *nf_arena_strndup(nf_arena *a, const char *s, size_t n)
{
    if (n == SIZE_MAX)
        return NULL;
    char *p = nf_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

size_t nf_arena_bytes(const nf_arena *a)
{
    return a ? a->bytes : 0;
}

/* ---- index maps ------------------------------------------------------------ */

/* A bijection of 32-bit tags to slots: the tag's low bits alone would put
 * every tag that differs only above the mask into one chain. */
static inline size_t slot_of(uint32_t tag, size_t mask)
{
    uint32_t x = tag;
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return (size_t)x & mask;
}

static bool ix_alloc(nf_ixmap *m, size_t n)
{
    if (n >= UINT32_MAX - 1)
        return false;
    size_t cap = 16;
    while (cap / 10 * 7 < n) /* load at most 0.7 */
        cap *= 2;
    nf_ixslot *s = calloc(cap, sizeof *s);
    if (!s)
        return false;
    nf_advise_huge(s, cap * sizeof *s); /* probed at random: fewer TLB misses */
    if (m->s) {
        for (size_t i = 0; i <= m->mask; i++) {
            if (!m->s[i].idx)
                continue;
            size_t j = slot_of(m->s[i].tag, cap - 1);
            while (s[j].idx)
                j = (j + 1) & (cap - 1);
            s[j] = m->s[i];
        }
        free(m->s);
    }
    m->s = s;
    m->mask = cap - 1;
    return true;
}

bool nf_ixmap_init(nf_ixmap *m, size_t n)
{
    memset(m, 0, sizeof *m);
    nf_hash_key(m->key);
    return ix_alloc(m, n);
}

void nf_ixmap_free(nf_ixmap *m)
{
    free(m->s);
    memset(m, 0, sizeof *m);
}

uint32_t nf_ixmap_tag(const nf_ixmap *m, const char *k, size_t n)
{
    return (uint32_t)(nf_siphash13(k, n, m->key) >> 32);
}

size_t nf_ixmap_get(const nf_ixmap *m, uint32_t tag, nf_ixeq_fn eq, const void *ctx,
                    const char *k, size_t n)
{
    if (!m->s)
        return SIZE_MAX;
    for (size_t j = slot_of(tag, m->mask); m->s[j].idx; j = (j + 1) & m->mask)
        if (m->s[j].tag == tag && eq(ctx, m->s[j].idx - 1, k, n))
            return m->s[j].idx - 1;
    return SIZE_MAX;
}

size_t nf_ixmap_add(nf_ixmap *m, uint32_t tag, nf_ixeq_fn eq, const void *ctx,
                    const char *k, size_t n, size_t idx)
{
    if (!m->s || m->n + 1 > (m->mask + 1) / 10 * 7) {
        if (!ix_alloc(m, (m->n + 1) * 2))
            return SIZE_MAX - 1;
    }
    if (idx >= UINT32_MAX - 1)
        return SIZE_MAX - 1;
    size_t j = slot_of(tag, m->mask);
    for (; m->s[j].idx; j = (j + 1) & m->mask)
        if (m->s[j].tag == tag && eq(ctx, m->s[j].idx - 1, k, n))
            return m->s[j].idx - 1;
    m->s[j].tag = tag;
    m->s[j].idx = (uint32_t)(idx + 1);
    m->n++;
    return SIZE_MAX;
}

/* ---- the catalog's maps ---------------------------------------------------- */

static bool str_is(const char *s, const char *k, size_t n)
{
    return s && strncmp(s, k, n) == 0 && s[n] == 0;
}

bool nf_catalog_index_obj_eq(const void *ctx, size_t i, const char *k, size_t n)
{
    return str_is(((const nf_catalog *)ctx)->objects[i].id, k, n);
}

bool nf_catalog_index_bind_eq(const void *ctx, size_t i, const char *k, size_t n)
{
    return str_is(((const nf_catalog *)ctx)->bindings[i].name, k, n);
}

#define obj_eq nf_catalog_index_obj_eq
#define bind_eq nf_catalog_index_bind_eq

static bool comp_eq(const void *ctx, size_t i, const char *k, size_t n)
{
    return str_is(((const nf_catalog *)ctx)->components[i].id, k, n);
}

/* use keys are "parameter\0input" */
static bool use_eq(const void *ctx, size_t i, const char *k, size_t n)
{
    const nf_use *u = &((const nf_catalog *)ctx)->uses[i];
    if (!u->parameter || !u->input)
        return false;
    size_t pl = strlen(u->parameter);
    return pl < n && memcmp(u->parameter, k, pl) == 0 && k[pl] == 0 &&
           str_is(u->input, k + pl + 1, n - pl - 1);
}

static bool intern_eq(const void *ctx, size_t i, const char *k, size_t n)
{
    const nf_catalog *c = ctx;
    return str_is(c->ix->istr[i], k, n);
}

char *nf_catalog_intern(nf_catalog *c, const char *s, size_t n)
{
    struct nf_catalog_index *ix = c->ix;
    /* runs of one string (a layer's input, a format) skip the hash */
    if (ix->last && str_is(ix->last, s, n))
        return ix->last;
    if (!ix->intern.s && !nf_ixmap_init(&ix->intern, 64))
        return NULL;
    uint32_t tag = nf_ixmap_tag(&ix->intern, s, n);
    size_t i = nf_ixmap_get(&ix->intern, tag, intern_eq, c, s, n);
    if (i != SIZE_MAX)
        return ix->last = ix->istr[i];
    if (ix->n_istr == ix->cap_istr) {
        size_t nc = ix->cap_istr ? ix->cap_istr * 2 : 64;
        char **nv = realloc(ix->istr, nc * sizeof *nv);
        if (!nv)
            return NULL;
        ix->istr = nv;
        ix->cap_istr = nc;
    }
    char *p = nf_arena_strndup(c->arena, s, n);
    if (!p)
        return NULL;
    ix->istr[ix->n_istr] = p;
    if (nf_ixmap_add(&ix->intern, tag, intern_eq, c, s, n, ix->n_istr) == SIZE_MAX - 1)
        return NULL;
    ix->n_istr++;
    return ix->last = p;
}

/* A use's map key in buf (grown as needed); its length, or SIZE_MAX. */
static size_t use_key(const char *param, const char *input, char **buf, size_t *cap)
{
    size_t pl = strlen(param), il = strlen(input);
    if (pl > SIZE_MAX / 2 || il > SIZE_MAX / 2)
        return SIZE_MAX;
    size_t n = pl + 1 + il;
    if (n + 1 > *cap) {
        char *nb = realloc(*buf, n + 1);
        if (!nb)
            return SIZE_MAX;
        *buf = nb;
        *cap = n + 1;
    }
    memcpy(*buf, param, pl);
    (*buf)[pl] = 0;
    memcpy(*buf + pl + 1, input, il);
    (*buf)[n] = 0;
    return n;
}

static size_t owner_of(const nf_catalog *c, const char *name)
{
    const struct nf_catalog_index *ix = c->ix;
    if (!name || !ix || !ix->components.s)
        return SIZE_MAX;
    /* the first segment names the component (DESIGN 10); root "proposal/"
     * names are the text component's, when it has a proposal (spec 9.2) */
    const char *s = strchr(name, '/');
    if (!s)
        return SIZE_MAX;
    size_t n = (size_t)(s - name);
    if (n == 8 && memcmp(name, "proposal", 8) == 0)
        return ix->proposal_owner;
    return nf_ixmap_get(&ix->components, nf_ixmap_tag(&ix->components, name, n), comp_eq, c,
                        name, n);
}

void nf_catalog_index_free(nf_catalog *c)
{
    struct nf_catalog_index *ix = c->ix;
    if (!ix)
        return;
    nf_ixmap_free(&ix->objects);
    nf_ixmap_free(&ix->bindings);
    nf_ixmap_free(&ix->components);
    nf_ixmap_free(&ix->uses);
    nf_ixmap_free(&ix->intern);
    free(ix->use_start);
    free(ix->use_list);
    free(ix->istr);
    free(ix->kbuf);
    free(ix);
    c->ix = NULL;
}

size_t nf_catalog_index_add_object(nf_catalog *c, size_t i)
{
    nf_ixmap *m = &c->ix->objects;
    const char *id = c->objects[i].id;
    if (!id)
        return SIZE_MAX;
    size_t n = strlen(id);
    size_t r = nf_ixmap_add(m, nf_ixmap_tag(m, id, n), obj_eq, c, id, n, i);
    if (r != SIZE_MAX)
        c->ix->dup_objects++;
    return r;
}

size_t nf_catalog_index_add_binding(nf_catalog *c, size_t i)
{
    nf_ixmap *m = &c->ix->bindings;
    const char *nm = c->bindings[i].name;
    if (!nm)
        return SIZE_MAX;
    size_t n = strlen(nm);
    size_t r = nf_ixmap_add(m, nf_ixmap_tag(m, nm, n), bind_eq, c, nm, n, i);
    if (r != SIZE_MAX)
        c->ix->dup_bindings++;
    return r;
}

size_t nf_catalog_index_find_object(nf_catalog *c, const char *k, size_t n, size_t *hint)
{
    struct nf_catalog_index *ix = c->ix;
    size_t i = *hint;
    if (ix->dup_objects || i >= c->n_objects || !obj_eq(c, i, k, n))
        i = nf_ixmap_get(&ix->objects, nf_ixmap_tag(&ix->objects, k, n), obj_eq, c, k, n);
    if (i != SIZE_MAX)
        *hint = i + 1;
    return i;
}

size_t nf_catalog_index_find_binding(nf_catalog *c, const char *k, size_t n, size_t *hint)
{
    struct nf_catalog_index *ix = c->ix;
    size_t i = *hint;
    if (ix->dup_bindings || i >= c->n_bindings || !bind_eq(c, i, k, n))
        i = nf_ixmap_get(&ix->bindings, nf_ixmap_tag(&ix->bindings, k, n), bind_eq, c, k, n);
    if (i != SIZE_MAX)
        *hint = i + 1;
    return i;
}

size_t nf_catalog_index_add_use(nf_catalog *c, size_t i)
{
    const nf_use *u = &c->uses[i];
    if (!u->parameter || !u->input)
        return SIZE_MAX;
    struct nf_catalog_index *ix = c->ix;
    nf_ixmap *m = &ix->uses;
    size_t n = use_key(u->parameter, u->input, &ix->kbuf, &ix->kcap);
    return n == SIZE_MAX ? SIZE_MAX - 1
                         : nf_ixmap_add(m, nf_ixmap_tag(m, ix->kbuf, n), use_eq, c, ix->kbuf, n, i);
}

bool nf_catalog_index_build(nf_catalog *c)
{
    struct nf_catalog_index *ix = c->ix;
    /* maps the parser filled as it went (duplicates detected) stay */
    if (!ix->objects.s) {
        if (!nf_ixmap_init(&ix->objects, c->n_objects))
            return false;
        for (size_t i = 0; i < c->n_objects; i++)
            if (nf_catalog_index_add_object(c, i) == SIZE_MAX - 1)
                return false;
    }
    if (!ix->bindings.s) {
        if (!nf_ixmap_init(&ix->bindings, c->n_bindings))
            return false;
        for (size_t i = 0; i < c->n_bindings; i++)
            if (nf_catalog_index_add_binding(c, i) == SIZE_MAX - 1)
                return false;
    }
    if (!ix->uses.s) {
        if (!nf_ixmap_init(&ix->uses, c->n_uses))
            return false;
        for (size_t i = 0; i < c->n_uses; i++)
            if (nf_catalog_index_add_use(c, i) == SIZE_MAX - 1)
                return false;
    }
    nf_ixmap_free(&ix->components);
    free(ix->use_start);
    free(ix->use_list);
    ix->use_start = ix->use_list = NULL;
    if (!nf_ixmap_init(&ix->components, c->n_components))
        return false;
    ix->proposal_owner = SIZE_MAX;
    for (size_t i = 0; i < c->n_components; i++) {
        const char *id = c->components[i].id;
        if (!id)
            continue;
        size_t n = strlen(id);
        if (nf_ixmap_add(&ix->components, nf_ixmap_tag(&ix->components, id, n), comp_eq, c, id,
                         n, i) == SIZE_MAX - 1)
            return false;
        if (strcmp(id, NF_TEXT_COMPONENT) == 0 && ix->proposal_owner == SIZE_MAX &&
            c->components[i].has_proposal)
            ix->proposal_owner = i;
    }
    for (size_t i = 0; i < c->n_components; i++)
        c->components[i].target_index = nf_catalog_component(c, c->components[i].target);
    for (size_t i = 0; i < c->n_bindings; i++)
        c->bindings[i].component = owner_of(c, c->bindings[i].name);
    ix->use_start = calloc(c->n_bindings + 1, sizeof *ix->use_start);
    if (!ix->use_start)
        return false;
    size_t linked = 0;
    for (size_t i = 0; i < c->n_uses; i++) {
        nf_use *u = &c->uses[i];
        /* the parser resolved the uses after their bindings */
        if (u->binding == SIZE_MAX)
            u->binding = nf_catalog_binding(c, u->parameter);
        if (u->binding != SIZE_MAX) {
            ix->use_start[u->binding + 1]++;
            linked++;
        }
    }
    for (size_t b = 0; b < c->n_bindings; b++)
        ix->use_start[b + 1] += ix->use_start[b];
    ix->use_list = malloc((linked ? linked : 1) * sizeof *ix->use_list);
    size_t *fill = malloc((c->n_bindings ? c->n_bindings : 1) * sizeof *fill);
    if (!ix->use_list || !fill) {
        free(fill);
        return false;
    }
    memcpy(fill, ix->use_start, c->n_bindings * sizeof *fill);
    for (size_t i = 0; i < c->n_uses; i++)
        if (c->uses[i].binding != SIZE_MAX)
            ix->use_list[fill[c->uses[i].binding]++] = i;
    free(fill);
    ix->n_use_list = linked;
    return true;
}

/* ---- public lookups -------------------------------------------------------- */

size_t nf_catalog_find(const nf_catalog *c, const char *id)
{
    if (!c || !c->ix || !id)
        return SIZE_MAX;
    size_t n = strlen(id);
    const nf_ixmap *m = &c->ix->objects;
    return nf_ixmap_get(m, nf_ixmap_tag(m, id, n), obj_eq, c, id, n);
}

size_t nf_catalog_object_after(const nf_catalog *c, uint64_t off)
{
    size_t lo = 0, hi = c->n_objects;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const nf_object *o = &c->objects[mid];
        if (o->offset + o->bytes <= off) /* offset + bytes: checked at parse */
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t nf_catalog_binding(const nf_catalog *c, const char *name)
{
    if (!c || !c->ix || !name)
        return SIZE_MAX;
    size_t n = strlen(name);
    const nf_ixmap *m = &c->ix->bindings;
    return nf_ixmap_get(m, nf_ixmap_tag(m, name, n), bind_eq, c, name, n);
}

size_t nf_catalog_component(const nf_catalog *c, const char *id)
{
    if (!c || !c->ix || !id)
        return SIZE_MAX;
    size_t n = strlen(id);
    const nf_ixmap *m = &c->ix->components;
    return nf_ixmap_get(m, nf_ixmap_tag(m, id, n), comp_eq, c, id, n);
}

size_t nf_catalog_owner(const nf_catalog *c, const char *name)
{
    return c ? owner_of(c, name) : SIZE_MAX;
}

const size_t *nf_catalog_uses_of(const nf_catalog *c, size_t b, size_t *n)
{
    *n = 0;
    if (!c || !c->ix || !c->ix->use_start || b >= c->n_bindings)
        return NULL;
    size_t s = c->ix->use_start[b], e = c->ix->use_start[b + 1];
    *n = e - s;
    return e > s ? c->ix->use_list + s : NULL;
}

size_t nf_catalog_use(const nf_catalog *c, const char *parameter, const char *input)
{
    if (!c || !c->ix || !parameter || !input)
        return SIZE_MAX;
    char *kb = NULL;
    size_t cap = 0, n = use_key(parameter, input, &kb, &cap);
    size_t r = SIZE_MAX;
    if (n != SIZE_MAX) {
        const nf_ixmap *m = &c->ix->uses;
        r = nf_ixmap_get(m, nf_ixmap_tag(m, kb, n), use_eq, c, kb, n);
    }
    free(kb);
    return r;
}

nf_enc_status nf_object_encoding(const nf_object *o, nf_encoding *out)
{
    if (o->kind != NF_OBJ_TENSOR || o->enc_status != NF_ENC_OK)
        return o->kind != NF_OBJ_TENSOR ? NF_ENC_INVALID : o->enc_status;
    nf_encoding tmp;
    return nf_encoding_compute(o->format, o->layout, o->dims, o->rank, o->divisors,
                               out ? out : &tmp, NULL);
}

void nf_object_digest_hex(const nf_object *o, char hex[65])
{
    if (!o->has_digest) {
        hex[0] = 0;
        return;
    }
    nf_hex(o->digest, 32, hex);
}

static int hexv(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

bool nf_object_set_digest_hex(nf_object *o, const char *hex)
{
    uint8_t d[32];
    if (!hex)
        return false;
    for (size_t i = 0; i < 32; i++) {
        int a = hexv(hex[2 * i]), b = a < 0 ? -1 : hexv(hex[2 * i + 1]);
        if (a < 0 || b < 0)
            return false;
        d[i] = (uint8_t)(a << 4 | b);
    }
    if (hex[64])
        return false;
    memcpy(o->digest, d, 32);
    o->has_digest = true;
    return true;
}

/* ---- editing ------------------------------------------------------------------- */

static const uint64_t no_dims[1];

size_t nf_catalog_add_tensor(nf_catalog *c, const char *id, const uint64_t *dims,
                             unsigned rank, const char *format, const char *layout,
                             const char *source_json)
{
    if (!id || !format || !layout || rank > NF_MAX_RANK || nf_catalog_find(c, id) != SIZE_MAX)
        return SIZE_MAX;
    if (c->n_objects == c->objects_cap) {
        /* geometric: ninfer-quant adds one scalar per AllowA4 use */
        size_t nc = c->objects_cap < 16 ? 16 : c->objects_cap + c->objects_cap / 2;
        if (nc < c->n_objects + 1)
            nc = c->n_objects + 1;
        nf_object *nv = nc <= SIZE_MAX / sizeof *nv ? realloc(c->objects, nc * sizeof *nv) : NULL;
        if (!nv)
            return SIZE_MAX;
        c->objects = nv;
        c->objects_cap = nc;
    }
    nf_object *o = &c->objects[c->n_objects];
    memset(o, 0, sizeof *o);
    o->id = nf_arena_strndup(c->arena, id, strlen(id));
    o->kind = NF_OBJ_TENSOR;
    o->rank = rank;
    uint64_t *dm = rank ? nf_arena_alloc(c->arena, rank * sizeof *dm) : NULL;
    if (rank && dm)
        memcpy(dm, dims, rank * sizeof *dims);
    o->dims = rank ? dm : (uint64_t *)no_dims;
    o->format_name = nf_catalog_intern(c, format, strlen(format));
    o->layout_name = nf_catalog_intern(c, layout, strlen(layout));
    o->format = nf_format_from_name(format, strlen(format));
    o->layout = nf_layout_from_name(layout, strlen(layout));
    o->divisors = 1;
    o->source_raw = source_json ? nf_arena_strndup(c->arena, source_json, strlen(source_json))
                                : NULL;
    if (!o->id || !o->dims || !o->format_name || !o->layout_name ||
        (source_json && !o->source_raw))
        return SIZE_MAX;
    if (!nf_shape_elements(o->dims, o->rank, &o->elements))
        o->elements = 0;
    nf_encoding enc;
    o->enc_status = nf_encoding_compute(o->format, o->layout, o->dims, o->rank, 1, &enc, NULL);
    if (o->enc_status == NF_ENC_OK) {
        o->bytes = enc.encoded_bytes;
        o->has_bytes = true;
    }
    size_t idx = c->n_objects;
    size_t n = strlen(o->id);
    const nf_ixmap *m = &c->ix->objects;
    if (nf_ixmap_add(&c->ix->objects, nf_ixmap_tag(m, o->id, n), obj_eq, c, o->id, n, idx) !=
        SIZE_MAX)
        return SIZE_MAX;
    c->n_objects++;
    return idx;
}

bool nf_object_set_encoding(nf_catalog *c, size_t i, const char *format, const char *layout,
                            uint64_t divisors)
{
    nf_object *o = &c->objects[i];
    char *f = nf_catalog_intern(c, format, strlen(format));
    char *l = nf_catalog_intern(c, layout, strlen(layout));
    if (!f || !l)
        return false;
    o->format_name = f;
    o->layout_name = l;
    o->format = nf_format_from_name(format, strlen(format));
    o->layout = nf_layout_from_name(layout, strlen(layout));
    o->divisors = divisors ? divisors : 1;
    o->has_divisors = divisors > 0;
    nf_encoding enc;
    o->enc_status = nf_encoding_compute(o->format, o->layout, o->dims, o->rank, o->divisors,
                                        &enc, NULL);
    o->bytes = o->enc_status == NF_ENC_OK ? enc.encoded_bytes : 0;
    o->has_bytes = o->enc_status == NF_ENC_OK;
    o->has_digest = false;
    return true;
}

bool nf_use_set_policy(nf_catalog *c, nf_use *u, const char *policy)
{
    if (!policy) {
        u->activation_policy = NULL;
        return true;
    }
    char *p = nf_catalog_intern(c, policy, strlen(policy));
    if (!p)
        return false;
    u->activation_policy = p;
    return true;
}

bool nf_use_add_aux(nf_catalog *c, nf_use *u, const char *role, const char *obj_id, size_t obj)
{
    for (size_t i = 0; i < u->n_aux; i++)
        if (!strcmp(u->aux[i].role, role))
            return false;
    /* arena arrays cannot grow in place: a new one (the old is left) */
    nf_aux *na = nf_arena_alloc(c->arena, (u->n_aux + 1) * sizeof *na);
    if (!na)
        return false;
    if (u->n_aux)
        memcpy(na, u->aux, u->n_aux * sizeof *na);
    nf_aux *a = &na[u->n_aux];
    memset(a, 0, sizeof *a);
    a->role = nf_catalog_intern(c, role, strlen(role));
    a->b.object = obj < c->n_objects && c->objects[obj].id && !strcmp(c->objects[obj].id, obj_id)
                      ? c->objects[obj].id
                      : nf_arena_strndup(c->arena, obj_id, strlen(obj_id));
    a->b.obj = obj;
    if (!a->role || !a->b.object)
        return false;
    u->aux = na;
    u->n_aux++;
    return true;
}

bool nf_use_remove_aux(nf_catalog *c, nf_use *u, const char *role)
{
    (void)c; /* the entries stay in the arena; the array closes up */
    for (size_t i = 0; i < u->n_aux; i++)
        if (!strcmp(u->aux[i].role, role)) {
            memmove(&u->aux[i], &u->aux[i + 1], (u->n_aux - i - 1) * sizeof *u->aux);
            u->n_aux--;
            return true;
        }
    return false;
}

bool nf_object_set_source_raw(nf_catalog *c, size_t i, const char *source_json)
{
    char *t = nf_arena_strndup(c->arena, source_json, strlen(source_json));
    if (!t)
        return false;
    c->objects[i].source_raw = t;
    return true;
}
