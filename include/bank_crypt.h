/* Identity data sealed at rest (docs/security.md): AES-256-GCM with a fresh random nonce per
 * value and the column and the row's id as associated data, so that a value copied into
 * another row or column does not open; and a keyed hash (HMAC-SHA256, a key of its own) where
 * a value must be found or kept unique without being readable. Keys come from owner-only
 * files; each encryption key has an id, written with every value it seals, so that values
 * sealed under an older key still open while `bankctl rekey` moves them to the current one.
 * No httpd dependency. */
#ifndef BANK_CRYPT_H
#define BANK_CRYPT_H

#include <apr_pools.h>

#define BANK_KEY_LEN 32
/* A key id: 1 to this many of A-Z a-z 0-9 _ - . */
#define BANK_KEY_ID_MAX 32

typedef struct bank_keyring_s bank_keyring_t;

/* An empty keyring; its keys are wiped when p goes. */
bank_keyring_t *bank_keyring_make(apr_pool_t *p);
/* Reads a key file: 64 hexadecimal digits (a final newline allowed) or exactly 32 bytes. A
 * file that its group or others may read or write is refused. NULL, or why not (naming the
 * file, never showing its content). */
const char *bank_key_file_read(apr_pool_t *p, const char *path, unsigned char key[BANK_KEY_LEN]);
/* 1 if id is a well-formed key id. */
int bank_key_id_valid(const char *id);
/* Adds an encryption key; current: the one new values are sealed with (one only). NULL, or
 * why not (an id given twice, a second current key). */
const char *bank_keyring_add(bank_keyring_t *kr, const char *id, const unsigned char *key,
                             int current);
/* The key of the keyed hash. */
void bank_keyring_set_hash_key(bank_keyring_t *kr, const unsigned char *key);
/* NULL, or what the keyring lacks to seal and hash (no current key, no hash key). */
const char *bank_keyring_incomplete(const bank_keyring_t *kr);
/* The current key's id (NULL: none). */
const char *bank_keyring_current(const bank_keyring_t *kr);
/* The number of encryption keys, and the id and key of the i-th (in the order added). */
int bank_keyring_count(const bank_keyring_t *kr);
const char *bank_keyring_key_at(const bank_keyring_t *kr, int i, const unsigned char **key);
const unsigned char *bank_keyring_hash_key(const bank_keyring_t *kr);

/* The check value of a key (hex of HMAC-SHA256 under the key of a fixed text with kind): kept
 * in the database, it tells a wrong key at start-up without revealing the key. */
const char *bank_key_check_value(apr_pool_t *p, const unsigned char *key, const char *kind);

/* Seals plain with the current key: "ID:" and the base64 of nonce, ciphertext and tag. The
 * associated data binds it to column (e.g. "customers.bvn") and row (the row's id). NULL
 * when the keyring has no current key or OpenSSL fails. */
const char *bank_seal(apr_pool_t *p, const bank_keyring_t *kr, const char *column, const char *row,
                      const char *plain);

typedef enum {
    BANK_OPEN_OK = 0,
    BANK_OPEN_MALFORMED, /* not a sealed value */
    BANK_OPEN_NO_KEY,    /* sealed under a key id this keyring does not have */
    BANK_OPEN_FAILED     /* the tag does not match: another key, column or row, or altered */
} bank_open_rc;

/* Opens a value bank_seal made for the same column and row; *plain in p. *key_id (if not
 * NULL) gets the id it names, for the log. */
bank_open_rc bank_open(apr_pool_t *p, const bank_keyring_t *kr, const char *column, const char *row,
                       const char *sealed, const char **plain, const char **key_id);
/* The id of the key a sealed value names (NULL: not a sealed value). */
const char *bank_sealed_key_id(apr_pool_t *p, const char *sealed);
/* bank_open of *value, replaced by its plain text; on failure *value is NULL and the text
 * says which column of which row, its key id and why, for a log line. */
const char *bank_open_in_place(apr_pool_t *p, const bank_keyring_t *kr, const char *column,
                               const char *row, const char **value);
/* Why bank_open failed, for a log line. */
const char *bank_open_reason(bank_open_rc rc);

/* The keyed hash of value in domain (e.g. "bvn"), as 64 hex digits. NULL without a hash key. */
const char *bank_blind_hash(apr_pool_t *p, const bank_keyring_t *kr, const char *domain,
                            const char *value);

/* A keys file: lines "BankIdentityKey ID FILE", "BankIdentityOldKey ID FILE" and
 * "BankIdentityHashKey FILE" as in httpd.conf (so httpd can Include it), '#' comments; key
 * files relative to the keys file's directory. NULL and a complete keyring in *out, or why
 * not (naming the file and line). */
const char *bank_keyring_read_conf(apr_pool_t *p, const char *file, bank_keyring_t **out);
/* The same from lines already read (text, changed in place), key files relative to dir;
 * what names the lines in an error. */
const char *bank_keyring_parse(apr_pool_t *p, char *text, const char *dir, const char *what,
                               bank_keyring_t **out);

/* The keyring the store seals and opens with, set once by the host (the module after
 * reading its configuration, bankctl, the C tests). */
void bank_crypt_use(const bank_keyring_t *kr);
const bank_keyring_t *bank_crypt_keyring(void);

#endif
