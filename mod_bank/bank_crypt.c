/* Identity data sealed at rest (bank_crypt.h). A sealed value is "ID:" followed by the
 * standard base64 (no padding) of a 12-byte nonce, the ciphertext and the 16-byte tag. The
 * associated data is "mod_bank/1", the column, the row and the key id, each NUL-terminated:
 * a value moved to another column or row, or relabelled with another key id, does not open. */
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <apr_strings.h>
#include <apr_file_io.h>
#include <apr_file_info.h>
#include <apr_lib.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include "bank_crypt.h"
#include "bank_encoding.h"
#include "bank_rand.h"

#define NONCE_LEN 12
#define TAG_LEN 16
#define AAD_VERSION "mod_bank/1"
/* The longest plain value sealed: names and phones are far shorter. */
#define PLAIN_MAX 4096

typedef struct {
    const char *id;
    unsigned char key[BANK_KEY_LEN];
} enc_key_t;

struct bank_keyring_s {
    apr_pool_t *pool;
    apr_array_header_t *keys; /* enc_key_t */
    int current;              /* index in keys, -1: none */
    int has_hash;
    unsigned char hash_key[BANK_KEY_LEN];
    EVP_MAC_CTX *hash_mac; /* HMAC-SHA256 keyed with hash_key: copied for each hash */
};

static const bank_keyring_t *process_keyring = NULL;

/* AES-256-GCM and HMAC fetched from OpenSSL's provider store once, when the first keyring
 * is made (before httpd forks or starts threads): EVP_aes_256_gcm() and HMAC() fetch again
 * on every use, under the store's process-wide lock (bank_digest.c measured the same for
 * SHA-256). Freed with that keyring's pool. */
static EVP_CIPHER *aes_gcm = NULL;
static EVP_MAC *hmac = NULL;

static apr_status_t free_fetched(void *unused)
{
    (void)unused;
    EVP_CIPHER_free(aes_gcm);
    EVP_MAC_free(hmac);
    aes_gcm = NULL;
    hmac = NULL;
    return APR_SUCCESS;
}

static void fetch_once(apr_pool_t *p)
{
    if (!aes_gcm && !hmac) {
        aes_gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
        hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        apr_pool_cleanup_register(p, NULL, free_fetched, apr_pool_cleanup_null);
    }
}

/* A new HMAC-SHA256 context keyed with key (BANK_KEY_LEN bytes), or NULL. */
static EVP_MAC_CTX *hmac_keyed(const unsigned char *key)
{
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC_CTX *c = hmac ? EVP_MAC_CTX_new(hmac) : NULL;

    if (c && !EVP_MAC_init(c, key, BANK_KEY_LEN, params)) {
        EVP_MAC_CTX_free(c);
        c = NULL;
    }
    return c;
}

void bank_crypt_use(const bank_keyring_t *kr)
{
    process_keyring = kr;
}

const bank_keyring_t *bank_crypt_keyring(void)
{
    return process_keyring;
}

/* The key bytes are not left in freed pool memory. */
static apr_status_t wipe_keyring(void *data)
{
    bank_keyring_t *kr = data;
    int i;

    for (i = 0; i < kr->keys->nelts; i++) {
        OPENSSL_cleanse(APR_ARRAY_IDX(kr->keys, i, enc_key_t).key, BANK_KEY_LEN);
    }
    OPENSSL_cleanse(kr->hash_key, BANK_KEY_LEN);
    EVP_MAC_CTX_free(kr->hash_mac); /* OpenSSL wipes the key state it holds */
    kr->hash_mac = NULL;
    if (process_keyring == kr) {
        process_keyring = NULL;
    }
    return APR_SUCCESS;
}

bank_keyring_t *bank_keyring_make(apr_pool_t *p)
{
    bank_keyring_t *kr = apr_pcalloc(p, sizeof(*kr));

    kr->pool = p;
    kr->keys = apr_array_make(p, 4, sizeof(enc_key_t));
    kr->current = -1;
    fetch_once(p);
    apr_pool_cleanup_register(p, kr, wipe_keyring, apr_pool_cleanup_null);
    return kr;
}

int bank_key_id_valid(const char *id)
{
    apr_size_t n = id ? strlen(id) : 0;

    return n >= 1 && n <= BANK_KEY_ID_MAX &&
           strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") == n;
}

/* 64 hex digits, a final newline (LF or CRLF) allowed; or exactly BANK_KEY_LEN bytes. */
static int decode_key(const unsigned char *buf, apr_size_t n, unsigned char *key)
{
    apr_size_t i;

    if (n == BANK_KEY_LEN) {
        memcpy(key, buf, BANK_KEY_LEN);
        return 0;
    }
    if (n > 0 && buf[n - 1] == '\n') {
        n -= n > 1 && buf[n - 2] == '\r' ? 2 : 1;
    }
    if (n != 2 * BANK_KEY_LEN) {
        return -1;
    }
    for (i = 0; i < BANK_KEY_LEN; i++) {
        int hi = bank_hex_digit(buf[2 * i]), lo = bank_hex_digit(buf[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        key[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

const char *bank_key_file_read(apr_pool_t *p, const char *path, unsigned char key[BANK_KEY_LEN])
{
    unsigned char buf[2 * BANK_KEY_LEN + 3];
    apr_size_t n = sizeof(buf);
    apr_finfo_t fi;
    apr_file_t *f = NULL;
    apr_status_t rv;
    int bad;

    if (apr_stat(&fi, path, APR_FINFO_PROT | APR_FINFO_TYPE | APR_FINFO_OWNER, p) != APR_SUCCESS) {
        return apr_psprintf(p, "cannot read the key file %s", path);
    }
    if (fi.filetype != APR_REG ||
        (fi.protection & (APR_GREAD | APR_GWRITE | APR_WREAD | APR_WWRITE))) {
        return apr_psprintf(p,
                            "the key file %s must be a regular file that only its owner can "
                            "read (chmod 600 or 400)",
                            path);
    }
    /* root's, or the reader's own (httpd reads as the user it starts as, before it gives up
     * root: a key the runtime User owns would be the runtime's, beside the data) */
    if (fi.user != 0 && fi.user != geteuid()) {
        return apr_psprintf(p,
                            "the key file %s must belong to root or to the user reading it "
                            "(uid %ld), not to uid %ld (chown root:root)",
                            path, (long)geteuid(), (long)fi.user);
    }
    if (apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, APR_OS_DEFAULT, p) !=
        APR_SUCCESS) {
        return apr_psprintf(p, "cannot read the key file %s", path);
    }
    rv = apr_file_read_full(f, buf, sizeof(buf), &n);
    apr_file_close(f);
    bad = (rv != APR_SUCCESS && rv != APR_EOF) || n == sizeof(buf) || decode_key(buf, n, key) != 0;
    OPENSSL_cleanse(buf, sizeof(buf));
    return bad ? apr_psprintf(p,
                              "the key file %s must hold 64 hexadecimal digits (openssl rand "
                              "-hex 32) or exactly 32 bytes",
                              path)
               : NULL;
}

const char *bank_keyring_add(bank_keyring_t *kr, const char *id, const unsigned char *key,
                             int current)
{
    enc_key_t *k;
    int i;

    if (!bank_key_id_valid(id)) {
        return apr_psprintf(kr->pool, "a key id is 1 to %d of A-Z a-z 0-9 _ - .", BANK_KEY_ID_MAX);
    }
    for (i = 0; i < kr->keys->nelts; i++) {
        if (strcmp(APR_ARRAY_IDX(kr->keys, i, enc_key_t).id, id) == 0) {
            return apr_psprintf(kr->pool, "the key id %s is given twice", id);
        }
    }
    if (current && kr->current >= 0) {
        return "only one key can be the current one";
    }
    k = apr_array_push(kr->keys);
    k->id = apr_pstrdup(kr->pool, id);
    memcpy(k->key, key, BANK_KEY_LEN);
    if (current) {
        kr->current = kr->keys->nelts - 1;
    }
    return NULL;
}

void bank_keyring_set_hash_key(bank_keyring_t *kr, const unsigned char *key)
{
    memcpy(kr->hash_key, key, BANK_KEY_LEN);
    EVP_MAC_CTX_free(kr->hash_mac);
    kr->hash_mac = hmac_keyed(key);
    kr->has_hash = 1;
}

const char *bank_keyring_incomplete(const bank_keyring_t *kr)
{
    return !kr               ? "no identity keys"
           : kr->current < 0 ? "no current encryption key"
           : !kr->has_hash   ? "no hash key"
           : !kr->hash_mac   ? "no HMAC-SHA256 from OpenSSL for the hash key"
                             : NULL;
}

const char *bank_keyring_current(const bank_keyring_t *kr)
{
    return kr && kr->current >= 0 ? APR_ARRAY_IDX(kr->keys, kr->current, enc_key_t).id : NULL;
}

int bank_keyring_count(const bank_keyring_t *kr)
{
    return kr->keys->nelts;
}

const char *bank_keyring_key_at(const bank_keyring_t *kr, int i, const unsigned char **key)
{
    const enc_key_t *k = &APR_ARRAY_IDX(kr->keys, i, enc_key_t);

    *key = k->key;
    return k->id;
}

const unsigned char *bank_keyring_hash_key(const bank_keyring_t *kr)
{
    return kr->has_hash ? kr->hash_key : NULL;
}

static const enc_key_t *find_key(const bank_keyring_t *kr, const char *id, apr_size_t len)
{
    int i;

    for (i = 0; kr && i < kr->keys->nelts; i++) {
        const enc_key_t *k = &APR_ARRAY_IDX(kr->keys, i, enc_key_t);
        if (strlen(k->id) == len && memcmp(k->id, id, len) == 0) {
            return k;
        }
    }
    return NULL;
}

/* The hex HMAC of a and b, each with its NUL (("ab", "c") and ("a", "bc") hash apart),
 * computed on a copy of keyed, which stays as it was: threads share it, and OpenSSL's copy
 * only reads it (it takes references to the digest, fetched once by EVP_MAC_init). */
static const char *hmac_hex(apr_pool_t *p, const EVP_MAC_CTX *keyed, const char *a, const char *b)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t len = 0;
    EVP_MAC_CTX *c = keyed ? EVP_MAC_CTX_dup(keyed) : NULL;
    int ok = c && EVP_MAC_update(c, (const unsigned char *)a, strlen(a) + 1) &&
             EVP_MAC_update(c, (const unsigned char *)b, strlen(b) + 1) &&
             EVP_MAC_final(c, mac, &len, sizeof(mac));

    EVP_MAC_CTX_free(c);
    return ok ? bank_hex(p, mac, len) : NULL;
}

const char *bank_key_check_value(apr_pool_t *p, const unsigned char *key, const char *kind)
{
    EVP_MAC_CTX *c = hmac_keyed(key);
    const char *v = hmac_hex(p, c, "mod_bank key check", kind);

    EVP_MAC_CTX_free(c);
    return v;
}

const char *bank_blind_hash(apr_pool_t *p, const bank_keyring_t *kr, const char *domain,
                            const char *value)
{
    return kr && kr->has_hash ? hmac_hex(p, kr->hash_mac, domain, value) : NULL;
}

/* The associated data: version, column, row and key id, each with its NUL. */
static char *make_aad(apr_pool_t *p, const char *column, const char *row, const char *id,
                      apr_size_t idlen, int *len)
{
    apr_size_t a = sizeof(AAD_VERSION), c = strlen(column) + 1, r = strlen(row) + 1;
    char *aad = apr_palloc(p, a + c + r + idlen + 1);

    memcpy(aad, AAD_VERSION, a);
    memcpy(aad + a, column, c);
    memcpy(aad + a + c, row, r);
    memcpy(aad + a + c + r, id, idlen);
    aad[a + c + r + idlen] = '\0';
    *len = (int)(a + c + r + idlen + 1);
    return aad;
}

/* One AES-256-GCM pass: encrypt (enc=1, the tag written after out) or decrypt (enc=0, the
 * tag read from tag). 0 or -1. */
static int gcm(int enc, const unsigned char *key, const unsigned char *nonce, const char *aad,
               int aadlen, const unsigned char *in, int len, unsigned char *out, unsigned char *tag)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int n = 0, fin = 0, ok;

    if (!ctx) {
        return -1;
    }
    ok =
        EVP_CipherInit_ex(ctx, aes_gcm ? aes_gcm : EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) == 1 &&
        EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, enc) == 1 &&
        EVP_CipherUpdate(ctx, NULL, &n, (const unsigned char *)aad, aadlen) == 1 &&
        EVP_CipherUpdate(ctx, out, &n, in, len) == 1 &&
        (enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag) == 1) &&
        EVP_CipherFinal_ex(ctx, out + n, &fin) == 1 &&
        (!enc || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag) == 1);
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : -1;
}

const char *bank_seal(apr_pool_t *p, const bank_keyring_t *kr, const char *column, const char *row,
                      const char *plain)
{
    const enc_key_t *k;
    apr_size_t len = strlen(plain);
    unsigned char *buf;
    const char *aad;
    int aadlen;

    if (!kr || kr->current < 0 || len > PLAIN_MAX) {
        return NULL;
    }
    k = &APR_ARRAY_IDX(kr->keys, kr->current, enc_key_t);
    buf = apr_palloc(p, NONCE_LEN + len + TAG_LEN);
    aad = make_aad(p, column, row, k->id, strlen(k->id), &aadlen);
    /* A fresh random nonce per value: 2^32 values under one key keep the collision chance
     * far below 2^-32 (NIST SP 800-38D); rekey starts a new key long before. */
    if (bank_random_bytes(buf, NONCE_LEN) != 0 ||
        gcm(1, k->key, buf, aad, aadlen, (const unsigned char *)plain, (int)len, buf + NONCE_LEN,
            buf + NONCE_LEN + len) != 0) {
        return NULL;
    }
    return apr_pstrcat(p, k->id, ":", bank_b64std_encode(p, buf, NONCE_LEN + len + TAG_LEN),
                       (char *)NULL);
}

const char *bank_sealed_key_id(apr_pool_t *p, const char *sealed)
{
    const char *colon = sealed ? strchr(sealed, ':') : NULL;
    const char *id = colon ? apr_pstrndup(p, sealed, (apr_size_t)(colon - sealed)) : NULL;

    return id && bank_key_id_valid(id) ? id : NULL;
}

bank_open_rc bank_open(apr_pool_t *p, const bank_keyring_t *kr, const char *column, const char *row,
                       const char *sealed, const char **plain, const char **key_id)
{
    const char *id = bank_sealed_key_id(p, sealed), *aad;
    const enc_key_t *k;
    unsigned char *raw = NULL;
    apr_size_t rawlen = 0, len;
    char *out;
    int aadlen;

    *plain = NULL;
    if (key_id) {
        *key_id = id;
    }
    if (!id || bank_b64std_decode(p, sealed + strlen(id) + 1, &raw, &rawlen) != 0 ||
        rawlen < NONCE_LEN + TAG_LEN) {
        return BANK_OPEN_MALFORMED;
    }
    if (!(k = find_key(kr, id, strlen(id)))) {
        return BANK_OPEN_NO_KEY;
    }
    len = rawlen - NONCE_LEN - TAG_LEN;
    out = apr_palloc(p, len + 1);
    aad = make_aad(p, column, row, id, strlen(id), &aadlen);
    if (gcm(0, k->key, raw, aad, aadlen, raw + NONCE_LEN, (int)len, (unsigned char *)out,
            raw + NONCE_LEN + len) != 0) {
        return BANK_OPEN_FAILED;
    }
    out[len] = '\0';
    if (strlen(out) != len) {
        return BANK_OPEN_MALFORMED; /* a NUL inside: never sealed by bank_seal */
    }
    *plain = out;
    return BANK_OPEN_OK;
}

const char *bank_open_in_place(apr_pool_t *p, const bank_keyring_t *kr, const char *column,
                               const char *row, const char **value)
{
    const char *plain = NULL, *id = NULL;
    bank_open_rc rc = bank_open(p, kr, column, row, *value, &plain, &id);

    if (rc != BANK_OPEN_OK) {
        *value = NULL;
        return apr_psprintf(p, "%s of row %s (key %s): %s", column, row, id ? id : "?",
                            bank_open_reason(rc));
    }
    *value = plain;
    return NULL;
}

const char *bank_open_reason(bank_open_rc rc)
{
    switch (rc) {
    case BANK_OPEN_OK:
        return "opened";
    case BANK_OPEN_MALFORMED:
        return "not a sealed value";
    case BANK_OPEN_NO_KEY:
        return "sealed under a key id that is not configured";
    default:
        return "does not open: another key, or a value of another row or column, or altered";
    }
}

/* ---- keys files ---- */

#define CONF_MAX 65536

/* The next word of *s (double quotes around it allowed), or NULL at the end of the line. */
static char *next_word(char **s)
{
    char *w, *end;

    while (**s == ' ' || **s == '\t') {
        (*s)++;
    }
    if (!**s) {
        return NULL;
    }
    if (**s == '"' && (end = strchr(*s + 1, '"')) != NULL) {
        w = *s + 1;
    } else {
        w = *s;
        end = w + strcspn(w, " \t");
    }
    *s = *end ? end + 1 : end;
    *end = '\0';
    return w;
}

/* One line of a keys file into kr: NULL or why not. */
static const char *conf_line(apr_pool_t *p, bank_keyring_t *kr, const char *dir, char *line)
{
    char *name = next_word(&line), *a = name ? next_word(&line) : NULL;
    char *b = a ? next_word(&line) : NULL, *path = b ? b : a;
    unsigned char key[BANK_KEY_LEN];
    int hash = name && strcasecmp(name, "BankIdentityHashKey") == 0;
    const char *err;

    if (!name || name[0] == '#') {
        return NULL;
    }
    if (next_word(&line) || !a || (hash && b) ||
        (!hash && (!b || (strcasecmp(name, "BankIdentityKey") != 0 &&
                          strcasecmp(name, "BankIdentityOldKey") != 0)))) {
        return "expected BankIdentityKey ID FILE, BankIdentityOldKey ID FILE or "
               "BankIdentityHashKey FILE";
    }
    if (hash && kr->has_hash) {
        return "BankIdentityHashKey given twice";
    }
    if (path[0] != '/') {
        path = apr_pstrcat(p, dir, "/", path, (char *)NULL);
    }
    if (!(err = bank_key_file_read(p, path, key))) {
        if (hash) {
            bank_keyring_set_hash_key(kr, key);
        } else {
            err = bank_keyring_add(kr, a, key, strcasecmp(name, "BankIdentityKey") == 0);
        }
    }
    OPENSSL_cleanse(key, sizeof(key));
    return err;
}

const char *bank_keyring_parse(apr_pool_t *p, char *text, const char *dir, const char *what,
                               bank_keyring_t **out)
{
    bank_keyring_t *kr = bank_keyring_make(p);
    char *line, *state = NULL;
    const char *err;
    int lineno = 0;

    *out = NULL;
    for (line = apr_strtok(text, "\n", &state); line; line = apr_strtok(NULL, "\n", &state)) {
        lineno++;
        line[strcspn(line, "\r")] = '\0';
        if ((err = conf_line(p, kr, dir, line)) != NULL) {
            return apr_psprintf(p, "%s:%d: %s", what, lineno, err);
        }
    }
    if ((err = bank_keyring_incomplete(kr)) != NULL) {
        return apr_psprintf(p,
                            "%s: %s (BankIdentityKey ID FILE and BankIdentityHashKey FILE are "
                            "needed)",
                            what, err);
    }
    *out = kr;
    return NULL;
}

const char *bank_keyring_read_conf(apr_pool_t *p, const char *file, bank_keyring_t **out)
{
    const char *slash = strrchr(file, '/');
    const char *dir = slash ? apr_pstrndup(p, file, (apr_size_t)(slash - file)) : ".";
    char *text = apr_palloc(p, CONF_MAX + 1);
    apr_size_t n = 0;
    apr_file_t *f = NULL;
    apr_status_t rv;

    *out = NULL;
    if (apr_file_open(&f, file, APR_FOPEN_READ, APR_OS_DEFAULT, p) != APR_SUCCESS) {
        return apr_psprintf(p, "cannot read the keys file %s", file);
    }
    rv = apr_file_read_full(f, text, CONF_MAX, &n);
    apr_file_close(f);
    if ((rv != APR_SUCCESS && rv != APR_EOF) || n == CONF_MAX) {
        return apr_psprintf(p, "cannot read the keys file %s (or longer than %d bytes)", file,
                            CONF_MAX);
    }
    text[n] = '\0';
    return bank_keyring_parse(p, text, dir, file, out);
}
