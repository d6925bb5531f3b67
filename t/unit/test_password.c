/* Unit tests for password verification, against hashes made by other tools. */
#include "unit.h"

#include <apr_strings.h>

#include "bank_password.h"

/* AdonisJS' own fixtures for "password" (adonisjs/hash tests/drivers/scrypt.spec.ts and
 * bcrypt.spec.ts), cross-checked here with python's hashlib.scrypt and htpasswd -vb. */
#define ADONIS_SCRYPT                                                                              \
    "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$"                                              \
    "IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8aQeGyWZdA9k9L"                                              \
    "8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA"
#define ADONIS_BCRYPT "$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ"
/* The same bcrypt hash in modular-crypt form (salt and hash re-encoded in bcrypt's alphabet
 * by python); `htpasswd -vb` accepts it for "password". */
#define ADONIS_BCRYPT_MCF "$2b$10$r.czZfk3xmmyQv5XdpAb5uyR2Ad6frnr96DZhI8aCpbYRf6R4AjWO"

/* The scrypt fixtures below were made by these shell one-liners (wrapped here; rejoin the lines).
 * python3 -c "import hashlib,base64;e=lambda b:base64.b64encode(b).decode().rstrip('=');
 *   s=b'mod_bank-salt-01';print('\$scrypt\$n=16384,r=8,p=1\$'+e(s)+'\$'+e(hashlib.scrypt(
 *   b'correct horse battery staple',salt=s,n=16384,r=8,p=1,dklen=64)))" */
#define PY_SCRYPT_DEFAULT                                                                          \
    "$scrypt$n=16384,r=8,p=1$bW9kX2Jhbmstc2FsdC0wMQ$"                                              \
    "J3vHaA39GfhGcIZI1jrNamuHGL94HneCRiRpIXIqLLAhvCZ"                                              \
    "rZgzU0Ty9/t5Qd5L4p3AaG3sfTzfEXVzHDwjAew"
/* python3 -c "import hashlib,base64;e=lambda b:base64.b64encode(b).decode().rstrip('=');
 *   s=b'saltsalt';print('\$scrypt\$p=2,n=1024,r=4\$'+e(s)+'\$'+e(hashlib.scrypt(b'hunter2',
 *   salt=s,n=1024,r=4,p=2,dklen=64)))" */
#define PY_SCRYPT_REORDERED                                                                        \
    "$scrypt$p=2,n=1024,r=4$c2FsdHNhbHQ$/"                                                         \
    "EPyCrj1OqXOLLAFBeM3JlxYwQrO7iMYzQkuddeHM6l6ezVINDMctFNHQ+Z+"                                  \
    "+TfjnS80L6X9toAr82GFQLz7pQ"
/* python3 -c "import hashlib,base64;e=lambda b:base64.b64encode(b).decode().rstrip('=');
 *   s=bytes(range(16));print('\$scrypt\$n=1024,r=8,p=1\$'+e(s)+'\$'+e(hashlib.scrypt(
 *   'pässwörd'.encode(),salt=s,n=1024,r=8,p=1,dklen=128)))" */
#define PY_SCRYPT_UTF8_128                                                                         \
    "$scrypt$n=1024,r=8,p=1$AAECAwQFBgcICQoLDA0ODw$+klCkubs0ckYiTbZO4MWS3k2LxOt6MCvuou+"           \
    "ZUKyyp6qUEgU/"                                                                                \
    "qVThWLVcT0SWq7dAInImpHkxWRmnlFuF9CBr5Kr/EShEgXDZhs4Jlg4+W6/"                                  \
    "7YP0tPG16xuPOSNXnnBjM4H5SmVDeAHk98d"                                                          \
    "9AKIKqqGWIeUoydUsZ/8zcCJgauU"

/* htpasswd -nbB -C 5 user password */
#define HTPASSWD_2Y "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6"
#define HTPASSWD_2B "$2b$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6"
#define HTPASSWD_2A "$2a$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6"

/* argon2 hashes made by node's `argon2` package (the one AdonisJS's argon2 driver uses), in
 * the driver's own layout ($argon2id$v=19$m=..,t=..,p=..$salt$hash, base64 without padding):
 *   const b64 = b => b.toString('base64').replace(/=+$/, '');
 *   const h = await argon2.hash(pw, {type, memoryCost: m, timeCost: t, parallelism: p,
 *                                    raw: true, salt, hashLength, version});
 *   `$argon2id$v=19$m=${m},t=${t},p=${p}$${b64(salt)}$${b64(h)}`
 * The last two are that package's own encoded output (it writes m, p, t). */
#define ARGON2ID_ADONIS                                                                            \
    "$argon2id$v=19$m=65536,t=3,p=4$69FjE/fPLzZfE7lBLrrTTA$YAuYW3A3BFB3pCPTyxhRv/qrn4/wOad/SX/"    \
    "rjCS3xbQ"
#define ARGON2I_ADONIS                                                                             \
    "$argon2i$v=19$m=65536,t=3,p=4$73LO17EUE3Dft8NyH2rAlw$v6XaCEP8XD5pL/2w4Me0+Dc8XQRsgJhz20c2c8F" \
    "BsqM"
#define ARGON2D_ADONIS                                                                             \
    "$argon2d$v=19$m=65536,t=3,p=4$6xdig7ahkSgrQ3EdbKlADw$mw30uHHk/sttc/VYh/1qIq2HGJEH6wXYZ228/"   \
    "tUpA8Q"
/* "pässwörd", two lanes */
#define ARGON2ID_UTF8                                                                              \
    "$argon2id$v=19$m=1024,t=2,p=2$NAYxCMkPXw93KQblSfMbXQ$Iso6QhCiqlPm/"                           \
    "dML0mJUNswKlPdro2pW2SbhRMLq6as"
/* "hunter2", version 16 (no v=), salt "saltsalt", 16-byte hash */
#define ARGON2I_V16 "$argon2i$m=256,t=4,p=1$c2FsdHNhbHQ$Hj6w31U1g7Sn0ym8eZopjw"
/* the empty password, eight lanes, 64-byte hash */
#define ARGON2D_EMPTY                                                                              \
    "$argon2d$v=19$m=64,t=1,p=8$/"                                                                 \
    "wpm6KTBl2VPmlVfcar7pA$aoYt4Srx5wFBZ59ICop8rfQyy9SD6VjMZ8Ly4rrJr0dm"                           \
    "DISXfeM8FFfphH2U0TEH0ZLet9um7M7X+V81bGHaVQ"
/* "password" */
#define ARGON2_NODE_KEY "sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po"
#define ARGON2ID_NODE                                                                              \
    "$argon2id$v=19$m=128,p=1,t=1$Nm/"                                                             \
    "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po"
#define ARGON2I_NODE                                                                               \
    "$argon2i$v=19$m=64,p=1,t=2$wpgjdyXTYYXvUBnh573crA$N2r/Le6689XTFXhVunbzAv7CWpe3I/"             \
    "VFxLvxh2iuWUA"

static int verify(apr_pool_t *p, const char *plain, const char *stored)
{
    return bank_password_verify(p, plain, stored);
}

static void test_scrypt(apr_pool_t *p)
{
    const char *cut;

    CHECK(verify(p, "password", ADONIS_SCRYPT) == BANK_PW_MATCH);
    CHECK(verify(p, "Password", ADONIS_SCRYPT) == BANK_PW_MISMATCH);
    CHECK(verify(p, "password ", ADONIS_SCRYPT) == BANK_PW_MISMATCH);
    CHECK(verify(p, "", ADONIS_SCRYPT) == BANK_PW_MISMATCH);
    CHECK(verify(p, "correct horse battery staple", PY_SCRYPT_DEFAULT) == BANK_PW_MATCH);
    CHECK(verify(p, "correct horse battery stapl", PY_SCRYPT_DEFAULT) == BANK_PW_MISMATCH);
    CHECK(verify(p, "hunter2", PY_SCRYPT_REORDERED) == BANK_PW_MATCH);
    CHECK(verify(p, "hunter3", PY_SCRYPT_REORDERED) == BANK_PW_MISMATCH);
    CHECK(verify(p, "p\xc3\xa4ssw\xc3\xb6rd", PY_SCRYPT_UTF8_128) == BANK_PW_MATCH);
    CHECK(verify(p, "passwort", PY_SCRYPT_UTF8_128) == BANK_PW_MISMATCH);

    /* Any other order of the same parameters is the same hash. */
    CHECK(verify(p, "password",
                 "$scrypt$p=1,r=8,n=16384$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8"
                 "aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") == BANK_PW_MATCH);
    /* A changed parameter or a flipped key bit is a different hash. */
    CHECK(verify(p, "password",
                 "$scrypt$n=8192,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8a"
                 "QeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") == BANK_PW_MISMATCH);
    CHECK(verify(p, "password",
                 "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$JDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit"
                 "8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") == BANK_PW_MISMATCH);

    /* Truncated: a key shorter than 64 bytes, an impossible base64 length, no key, no salt. */
    cut = apr_pstrndup(p, ADONIS_SCRYPT, strlen(ADONIS_SCRYPT) - 4);
    CHECK(verify(p, "password", cut) == BANK_PW_MALFORMED);
    cut = apr_pstrndup(p, ADONIS_SCRYPT, strlen(ADONIS_SCRYPT) - 1);
    CHECK(verify(p, "password", cut) == BANK_PW_MALFORMED);
    CHECK(verify(p, "password", "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$") ==
          BANK_PW_MALFORMED);
    CHECK(verify(p, "password", "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg") ==
          BANK_PW_MALFORMED);
    CHECK(verify(p, "password", "$scrypt$n=16384,r=8,p=1") == BANK_PW_MALFORMED);
    CHECK(verify(p, "password", "$scrypt$") == BANK_PW_MALFORMED);
}

/* ADONIS_SCRYPT with its parameter field replaced. */
static int with_params(apr_pool_t *p, const char *params)
{
    return verify(p, "password",
                  apr_pstrcat(p, "$scrypt$", params,
                              "$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8aQeGyWZd"
                              "A9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA",
                              (char *)NULL));
}

static void test_scrypt_malformed(apr_pool_t *p)
{
    static const char *const bad_params[] = {"",
                                             "n=16384,r=8",
                                             "r=8,p=1",
                                             "n=16384,p=1",
                                             "n=0,r=8,p=1",
                                             "n=1,r=8,p=1",
                                             "n=16383,r=8,p=1",
                                             "n=-16384,r=8,p=1",
                                             "n=16384,r=0,p=1",
                                             "n=16384,r=-1,p=1",
                                             "n=16384,r=8,p=0",
                                             "n=16384,r=8,p=1,n=16384",
                                             "n=16384,r=8,p=1,x=1",
                                             "n=16384,r=8,p=1,",
                                             ",n=16384,r=8,p=1",
                                             "n=16384,,r=8,p=1",
                                             "n=16384;r=8;p=1",
                                             "n=16384,r=8,p=01",
                                             "n=16384,r=8,p=1x",
                                             "n=,r=8,p=1",
                                             "N=16384,r=8,p=1",
                                             "n=2097152,r=8,p=1",
                                             "n=1048576,r=8,p=1",
                                             "n=16384,r=8,p=100",
                                             "n=16384,r=1000,p=1",
                                             "n=16384,r=8,p=99999999999",
                                             "n=16384,r=8,p=1 "};
    apr_size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(bad_params) / sizeof(bad_params[0]); i++) {
        if (with_params(p, bad_params[i]) != BANK_PW_MALFORMED) {
            ok = 0;
            fprintf(stderr, "accepted scrypt params '%s'\n", bad_params[i]);
        }
    }
    CHECK(ok);

    /* Salt and key: padding, bad characters, too short a salt, an extra field. */
    CHECK(verify(p, "password",
                 "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg==$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1"
                 "Iit8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") == BANK_PW_MALFORMED);
    CHECK(verify(p, "password",
                 "$scrypt$n=16384,r=8,p=1$YhdCGu1G-vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit"
                 "8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") == BANK_PW_MALFORMED);
    CHECK(verify(p, "password",
                 "$scrypt$n=16384,r=8,p=1$YhdCGu1G$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit8aQeGyWZdA9k9"
                 "L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") == BANK_PW_MALFORMED);
    CHECK(verify(p, "password",
                 "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12Nf1Iit"
                 "8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA$") == BANK_PW_MALFORMED);
    CHECK(verify(p, "password",
                 "$scrypt$v=1$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$IDWTbizFCq5n9YvPiy3YTPdUD12N"
                 "f1Iit8aQeGyWZdA9k9L8rKk9Ii5jQxSkV0MJyxr3/nzOHh+VTht0KFxiBA") ==
          BANK_PW_MALFORMED);
}

static void test_bcrypt(apr_pool_t *p)
{
    CHECK(verify(p, "password", HTPASSWD_2Y) == BANK_PW_MATCH);
    CHECK(verify(p, "password", HTPASSWD_2B) == BANK_PW_MATCH);
    CHECK(verify(p, "password", HTPASSWD_2A) == BANK_PW_MATCH);
    CHECK(verify(p, "passwor", HTPASSWD_2Y) == BANK_PW_MISMATCH);
    CHECK(verify(p, "Password", HTPASSWD_2B) == BANK_PW_MISMATCH);
    CHECK(verify(p, "", HTPASSWD_2A) == BANK_PW_MISMATCH);
    /* Last hash character changed ('6' -> '7'), then cost changed: both mismatch. */
    CHECK(verify(p, "password", "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC7") ==
          BANK_PW_MISMATCH);
    CHECK(verify(p, "password", "$2y$06$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6") ==
          BANK_PW_MISMATCH);

    CHECK(verify(p, "password", ADONIS_BCRYPT_MCF) == BANK_PW_MATCH);
    CHECK(verify(p, "password", ADONIS_BCRYPT) == BANK_PW_MATCH);
    CHECK(verify(p, "passwort", ADONIS_BCRYPT) == BANK_PW_MISMATCH);
    /* v=97 is $2a$, which bcrypt computes the same for ASCII passwords. */
    CHECK(verify(p, "password",
                 "$bcrypt$v=97$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ") ==
          BANK_PW_MATCH);
    /* No version: AdonisJS reads it as 97. */
    CHECK(verify(p, "password",
                 "$bcrypt$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ") ==
          BANK_PW_MATCH);
    CHECK(verify(p, "password",
                 "$bcrypt$v=98$r=11$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ") ==
          BANK_PW_MISMATCH);
}

static void test_bcrypt_malformed(apr_pool_t *p)
{
    static const char *const bad[] = {
        /* modular crypt */
        "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC",
        "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC66",
        "$2y$05$Wa5ia47.YWi0tsMukHW1bu", "$2y$05$",
        "$2x$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6",
        "$2$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6a",
        "$2y$5$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6a",
        "$2y$03$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6",
        "$2y$32$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6",
        "$2y$05$Wa5ia47+YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6",
        "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC=",
        "$2y$05$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUs$6",
        "$2y$0a$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6",
        /* PHC */
        "$bcrypt$v=10$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=121$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$i=12$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$r=0$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$r=32$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$r=8", "$bcrypt$v=98$r=8$$", "$bcrypt$v=98$r=8$aM15713r3Xsvxbi31lqr1Q",
        "$bcrypt$v=98$r=8$aM15713r3Xsvxbi31lqr1Q$",
        "$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClY",
        "$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w==$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcrypt$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ$x",
        "$bcrypt$x=1$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        "$bcript$v=98$r=10$tAe1bhm5zoo0Sx7ZfrCd7w$0T4Cf8htpt/8FbjK+cErdaTh8T6ClYQ",
        /* other schemes and junk */
        "$6$saltsalt$qFmFH.bQmmtXzyBY0s9v7Oicd2z4XSIecDzlB5KiA2/"
        "jctKu9YterLp8wwnSq.qc.eoxqOmSuNp2xS0ktL3nh/",
        "$1$saltsalt$T3XNM8b8Ry5TlcY9Bx9Dw0", "$apr1$saltsalt$vKfC6ar3z1F5YF6NnBaWd/",
        "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "5f4dcc3b5aa765d61d8327deb882cf99", "password", "",
        "$", "$$"};
    apr_size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (verify(p, "password", bad[i]) != BANK_PW_MALFORMED) {
            ok = 0;
            fprintf(stderr, "accepted malformed hash '%s'\n", bad[i]);
        }
    }
    CHECK(ok);
    CHECK(verify(p, "password", NULL) == BANK_PW_MALFORMED);
    CHECK(verify(p, NULL, HTPASSWD_2Y) == BANK_PW_MISMATCH);
}

static void test_hash_and_dummy(apr_pool_t *p)
{
    char *h1 = bank_password_hash(p, "s3cret-Pa55"), *h2 = bank_password_hash(p, "s3cret-Pa55");
    const char *dummy = bank_password_dummy();

    CHECK(h1 != NULL && h2 != NULL);
    if (h1 && h2) {
        CHECK(strncmp(h1, "$scrypt$n=16384,r=8,p=1$", 24) == 0);
        /* 16-byte salt (22 characters) and 64-byte key (86 characters), no padding. */
        CHECK(strlen(h1) == 24 + 22 + 1 + 86);
        CHECK(strchr(h1 + 24, '=') == NULL);
        CHECK(strcmp(h1, h2) != 0);
        CHECK(verify(p, "s3cret-Pa55", h1) == BANK_PW_MATCH);
        CHECK(verify(p, "s3cret-Pa55", h2) == BANK_PW_MATCH);
        CHECK(verify(p, "s3cret-Pa56", h1) == BANK_PW_MISMATCH);
    }
    h1 = bank_password_hash(p, "");
    CHECK(h1 != NULL && verify(p, "", h1) == BANK_PW_MATCH);

    /* The dummy is a well-formed default-cost hash that nothing we try matches. */
    CHECK(dummy != NULL && strncmp(dummy, "$scrypt$n=16384,r=8,p=1$", 24) == 0);
    CHECK(verify(p, "password", dummy) == BANK_PW_MISMATCH);
    CHECK(verify(p, "", dummy) == BANK_PW_MISMATCH);
    CHECK(verify(p, "demo-password", dummy) == BANK_PW_MISMATCH);
}

/* A stored hash must not buy seconds of work per sign-in: costs past the caps are refused
 * as malformed before any hashing. */
static void test_cost_caps(apr_pool_t *p)
{
    const char *salt = "AAAAAAAAAAAAAAAAAAAAAA";
    /* 64 zero bytes, standard base64 without padding */
    const char *key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    CHECK(
        verify(p, "x", apr_pstrcat(p, "$scrypt$n=32768,r=8,p=16$", salt, "$", key, (char *)NULL)) ==
        BANK_PW_MALFORMED);
    CHECK(verify(p, "x",
                 apr_pstrcat(p, "$scrypt$n=16384,r=16,p=16$", salt, "$", key, (char *)NULL)) ==
          BANK_PW_MALFORMED);
    CHECK(
        verify(p, "x", apr_pstrcat(p, "$scrypt$n=65536,r=8,p=1$", salt, "$", key, (char *)NULL)) ==
        BANK_PW_MALFORMED);
    /* 4x the default work is still accepted (a mismatch, not malformed) */
    CHECK(
        verify(p, "x", apr_pstrcat(p, "$scrypt$n=16384,r=8,p=4$", salt, "$", key, (char *)NULL)) ==
        BANK_PW_MISMATCH);
    CHECK(verify(p, "x", "$2b$15$abcdefghijklmnopqrstuuHIrMEWpUCQe2YqFR3sXwQ75u4od..9q") ==
          BANK_PW_MALFORMED);
}

static void test_argon2(apr_pool_t *p)
{
    /* password, hash, expected; the last four: the type, the version, a parameter or one
     * bit of the hash changed make another hash */
    static const struct {
        const char *plain, *hash;
        int want;
    } cases[] = {
        {"secret-Pa55", ARGON2ID_ADONIS, BANK_PW_MATCH},
        {"secret-Pa55", ARGON2I_ADONIS, BANK_PW_MATCH},
        {"secret-Pa55", ARGON2D_ADONIS, BANK_PW_MATCH},
        {"secret-Pa56", ARGON2ID_ADONIS, BANK_PW_MISMATCH},
        {"secret-Pa5", ARGON2I_ADONIS, BANK_PW_MISMATCH},
        {"", ARGON2D_ADONIS, BANK_PW_MISMATCH},
        {"p\xc3\xa4ssw\xc3\xb6rd", ARGON2ID_UTF8, BANK_PW_MATCH},
        {"passw\xc3\xb6rd", ARGON2ID_UTF8, BANK_PW_MISMATCH},
        {"hunter2", ARGON2I_V16, BANK_PW_MATCH},
        {"hunter3", ARGON2I_V16, BANK_PW_MISMATCH},
        {"", ARGON2D_EMPTY, BANK_PW_MATCH},
        {" ", ARGON2D_EMPTY, BANK_PW_MISMATCH},
        {"password", ARGON2ID_NODE, BANK_PW_MATCH},
        {"password", ARGON2I_NODE, BANK_PW_MATCH},
        {"Password", ARGON2ID_NODE, BANK_PW_MISMATCH},
        {"password", "$argon2d$v=19$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw$" ARGON2_NODE_KEY,
         BANK_PW_MISMATCH},
        {"password", "$argon2id$v=16$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw$" ARGON2_NODE_KEY,
         BANK_PW_MISMATCH},
        {"password", "$argon2id$v=19$m=128,p=1,t=2$Nm/QC06YltQPCQ6P8MC2jw$" ARGON2_NODE_KEY,
         BANK_PW_MISMATCH},
        {"password",
         "$argon2id$v=19$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw$tXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1F"
         "vw4M1po",
         BANK_PW_MISMATCH},
    };
    apr_size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = verify(p, cases[i].plain, cases[i].hash);
        if (got != cases[i].want) {
            ok = 0;
            fprintf(stderr, "argon2 case %u: %d, want %d\n", (unsigned)i, got, cases[i].want);
        }
    }
    CHECK(ok);
}

/* ARGON2ID_NODE with its parameter field replaced. */
static int argon2_with(apr_pool_t *p, const char *head, const char *params)
{
    return verify(p, "password",
                  apr_pstrcat(p, head, params,
                              "$Nm/QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
                              (char *)NULL));
}

static void test_argon2_malformed(apr_pool_t *p)
{
    static const char *const bad_params[] = {
        "", "m=128,t=1", "m=128,p=1", "t=1,p=1", "m=128,t=1,p=1,m=128", "m=128,t=1,p=1,x=1",
        "m=128,t=1,p=1,", "m=128,,t=1,p=1", "m=0128,t=1,p=1", "m=128,t=0,p=1", "m=128,t=1,p=0",
        "m=7,t=1,p=1", "m=63,t=1,p=8", "m=128,t=1,p=17", "m=128,t=17,p=1",
        /* past the caps: 2x the default memory, 4x the default work */
        "m=131073,t=1,p=1", "m=131072,t=7,p=1", "m=65536,t=13,p=4", "M=128,t=1,p=1",
        "m=128,t=1,p=1,keyid=AA", "m=128;t=1;p=1", "m=-128,t=1,p=1", "m=128,t=1,p=1 "};
    static const char *const bad[] = {
        "$argon2id$v=20$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2id$v=019$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2id$x=19$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2ix$v=19$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2$v=19$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw==$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/"
        "QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po$",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/QC06Y$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJ",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw$",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/QC06YltQPCQ6P8MC2jw",
        "$argon2id$v=19$m=128,p=1,t=1",
        "$argon2id$v=19",
        "$argon2id$",
        "$argon2id",
        "$argon2",
        "$argon2id$v=19$m=128,p=1,t=1$Nm/"
        "QC06Y-tQPCQ6P8MC2jw$sXlqo8flE61uzpx4hPhJzYm8nzVvXd9r5n1Fvw4M1po"};
    apr_size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(bad_params) / sizeof(bad_params[0]); i++) {
        if (argon2_with(p, "$argon2id$v=19$", bad_params[i]) != BANK_PW_MALFORMED) {
            ok = 0;
            fprintf(stderr, "accepted argon2 params '%s'\n", bad_params[i]);
        }
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (verify(p, "password", bad[i]) != BANK_PW_MALFORMED) {
            ok = 0;
            fprintf(stderr, "accepted malformed hash '%s'\n", bad[i]);
        }
    }
    CHECK(ok);
    /* at the caps: accepted (a mismatch, not malformed) */
    CHECK(argon2_with(p, "$argon2id$v=19$", "m=131072,t=6,p=16") == BANK_PW_MISMATCH);
    CHECK(argon2_with(p, "$argon2i$v=19$", "m=8,t=16,p=1") == BANK_PW_MISMATCH);
}

/* A dummy costs what the hash it follows costs: same algorithm, parameters, salt and key
 * lengths; a random salt and key, so it matches nothing. */
static void test_dummy_like(apr_pool_t *p)
{
    static const char *const cases[][2] = {
        {ADONIS_SCRYPT, "$scrypt$n=16384,r=8,p=1"},
        {PY_SCRYPT_REORDERED, "$scrypt$n=1024,r=4,p=2"},
        {ADONIS_BCRYPT, "$2b$10"},
        {ADONIS_BCRYPT_MCF, "$2b$10"},
        {HTPASSWD_2Y, "$2b$05"},
        {ARGON2ID_ADONIS, "$argon2id$v=19$m=65536,t=3,p=4"},
        {ARGON2I_V16, "$argon2i$v=16$m=256,t=4,p=1"},
        {ARGON2D_EMPTY, "$argon2d$v=19$m=64,t=1,p=8"},
    };
    const char *cost, *d1, *d2, *stored[6];
    apr_size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cost = NULL;
        d1 = bank_password_dummy_like(p, cases[i][0], &cost);
        d2 = bank_password_dummy_like(p, cases[i][0], &cost);
        CHECK(d1 && d2 && strcmp(d1, d2) != 0);
        CHECK_STR(cost, cases[i][1]);
        if (!d1) {
            continue;
        }
        CHECK(strncmp(d1, cases[i][1], strlen(cases[i][1])) == 0);
        /* salt and key as long as the original's: the same length, but for the bcrypt PHC
         * form (written as modular crypt, 60) and argon2 without v= (written with v=16) */
        CHECK(strlen(d1) == (!strncmp(cases[i][0], "$bcrypt$", 8) ? 60
                             : !strcmp(cases[i][0], ARGON2I_V16)  ? strlen(cases[i][0]) + 5
                                                                  : strlen(cases[i][0])));
        CHECK(verify(p, "password", d1) == BANK_PW_MISMATCH);
        CHECK(verify(p, "secret-Pa55", d1) == BANK_PW_MISMATCH);
    }
    /* nothing to follow in hashes that are not read, or past the bounds */
    CHECK(bank_password_dummy_like(
              p, "$2y$32$Wa5ia47.YWi0tsMukHW1buIptLLsFSNwXsdIiP/d.JUE6hcxcUsC6", &cost) == NULL);
    CHECK(bank_password_dummy_like(p, "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", &cost) == NULL);
    CHECK(bank_password_dummy_like(p, NULL, &cost) == NULL);

    /* the most common cost wins, the two bcrypt forms counting as one; the unreadable none */
    stored[0] = ADONIS_SCRYPT;
    stored[1] = ADONIS_BCRYPT;
    stored[2] = "garbage";
    stored[3] = ADONIS_BCRYPT_MCF;
    stored[4] = NULL;
    stored[5] = ARGON2ID_NODE;
    d1 = bank_password_dummy_of(p, stored, 6, &cost);
    CHECK(d1 && strncmp(d1, "$2b$10$", 7) == 0);
    CHECK_STR(cost, "$2b$10");
    stored[1] = ARGON2ID_NODE;
    d1 = bank_password_dummy_of(p, stored, 6, &cost);
    CHECK(d1 && strncmp(d1, "$argon2id$v=19$m=128,t=1,p=1$", 29) == 0);
    CHECK(bank_password_dummy_of(p, stored + 2, 1, &cost) == NULL);
    CHECK(bank_password_dummy_of(p, stored, 0, &cost) == NULL);

    /* the process's dummy: set, copied, reset; one too long to hold is refused */
    CHECK(bank_password_set_dummy(d1) == 0);
    CHECK_STR(bank_password_dummy_copy(p), d1);
    CHECK(bank_password_set_dummy(apr_psprintf(p, "%0600d", 1)) == -1);
    CHECK_STR(bank_password_dummy_copy(p), d1);
    bank_password_reset_dummy();
    CHECK_STR(bank_password_dummy_copy(p), bank_password_dummy());
}

/* Two verifications at once (bank_password_verify_two) answer as two alone, whether they are
 * computed together (scrypt of one cost) or one after the other (any other two). */
static void test_verify_two(apr_pool_t *p)
{
    static const struct {
        const char *plain[2], *stored[2];
        int want[2];
    } cases[] = {
        {{"password", "correct horse battery staple"},
         {ADONIS_SCRYPT, PY_SCRYPT_DEFAULT},
         {BANK_PW_MATCH, BANK_PW_MATCH}},
        {{"password", "correct horse battery stapl"},
         {ADONIS_SCRYPT, PY_SCRYPT_DEFAULT},
         {BANK_PW_MATCH, BANK_PW_MISMATCH}},
        {{"Password", "correct horse battery staple"},
         {ADONIS_SCRYPT, PY_SCRYPT_DEFAULT},
         {BANK_PW_MISMATCH, BANK_PW_MATCH}},
        {{"password", "password"}, {ADONIS_SCRYPT, ADONIS_SCRYPT}, {BANK_PW_MATCH, BANK_PW_MATCH}},
        /* costs differ: one after the other */
        {{"password", "hunter2"},
         {ADONIS_SCRYPT, PY_SCRYPT_REORDERED},
         {BANK_PW_MATCH, BANK_PW_MATCH}},
        {{"hunter3", "p\xc3\xa4ssw\xc3\xb6rd"},
         {PY_SCRYPT_REORDERED, PY_SCRYPT_UTF8_128},
         {BANK_PW_MISMATCH, BANK_PW_MATCH}},
        /* other algorithms, unreadable hashes and no password */
        {{"password", "password"}, {HTPASSWD_2B, ADONIS_SCRYPT}, {BANK_PW_MATCH, BANK_PW_MATCH}},
        {{"password", "password"},
         {ADONIS_SCRYPT, "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$"},
         {BANK_PW_MATCH, BANK_PW_MALFORMED}},
        {{"password", NULL}, {ADONIS_SCRYPT, ADONIS_SCRYPT}, {BANK_PW_MATCH, BANK_PW_MISMATCH}},
        {{"password", "password"}, {NULL, ADONIS_SCRYPT}, {BANK_PW_MALFORMED, BANK_PW_MATCH}},
    };
    apr_size_t i;
    int rc[2];

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc[0] = rc[1] = 42;
        bank_password_verify_two(p, cases[i].plain, cases[i].stored, rc);
        if (rc[0] != cases[i].want[0] || rc[1] != cases[i].want[1]) {
            fprintf(stderr, "verify_two case %zu: %d %d\n", (size_t)i, rc[0], rc[1]);
        }
        CHECK(rc[0] == cases[i].want[0] && rc[1] == cases[i].want[1]);
    }
    /* the kind that pairs: scrypt's cost as a string, whatever the order of its parameters */
    CHECK(strcmp(bank_password_pair_kind(p, ADONIS_SCRYPT), "$scrypt$n=16384,r=8,p=1") == 0);
    CHECK(strcmp(bank_password_pair_kind(p, PY_SCRYPT_REORDERED), "$scrypt$n=1024,r=4,p=2") == 0);
    CHECK(strcmp(bank_password_pair_kind(p, bank_password_dummy()), "$scrypt$n=16384,r=8,p=1") ==
          0);
    CHECK(bank_password_pair_kind(p, HTPASSWD_2B) == NULL);
    CHECK(bank_password_pair_kind(p, ARGON2ID_ADONIS) == NULL);
    CHECK(bank_password_pair_kind(p, "$scrypt$n=16384,r=8,p=1$YhdCGu1G+vTC6F9oJZ16lg$") == NULL);
    CHECK(bank_password_pair_kind(p, NULL) == NULL);
}

static void run_tests(apr_pool_t *p)
{
    test_dummy_like(p);
    test_cost_caps(p);
    test_scrypt(p);
    test_scrypt_malformed(p);
    test_verify_two(p);
    test_bcrypt(p);
    test_bcrypt_malformed(p);
    test_hash_and_dummy(p);
    test_argon2(p);
    test_argon2_malformed(p);
}
