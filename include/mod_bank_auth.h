/* mod_bank_auth.c: customer bearer tokens and the opening every customer endpoint shares. */
#ifndef MOD_BANK_AUTH_H
#define MOD_BANK_AUTH_H

#include <httpd.h>
#include "bank_bearer.h"
#include "bank_db.h"

/* The opening every customer endpoint shares: method gate, then the bearer token and the
 * ability (before any body is read): from the process's cache of verified tokens when
 * BankTokenCacheSeconds allows (*db NULL unless the revocation feed was read on one: take
 * one with bank_db when needed), else through a database connection (*db set). OK with the
 * principal set, or the status of the error answer already written (405, 503, 401, 403). */
int bank_customer_request(request_rec *r, apr_int64_t methods, const char *allow,
                          const char *ability, bank_db_t **db, bank_principal_t **out);
/* The verified BVN answers of this process (BankBvnCacheSeconds): 1 and *text (the whole
 * answer) if customer_id's answer to q was read at most BankBvnCacheSeconds ago and nothing
 * it is made of changed since, as far as the change feed, read within its interval (by
 * this request if needed: *db as in bank_customer_request), tells; else 0, and a kept answer
 * of the customer to another question is dropped. */
int bank_bvn_answer_get(request_rec *r, bank_db_t **db, const char *customer_id,
                        const bank_bvn_question_t *q, const char **text);
/* 1 and *epoch if an answer read from the database from now on may be kept (the cache is on
 * for r and its server's feed is current); taken before that read, so that a change heard
 * of since makes the put keep nothing. */
int bank_bvn_answer_epoch(request_rec *r, apr_uint64_t *epoch);
/* Keeps the answer text of a verified customer's repeat, read from the database at fetched
 * (after bank_bvn_answer_epoch said 1). */
void bank_bvn_answer_put(request_rec *r, const char *customer_id, const bank_bvn_question_t *q,
                         const char *text, apr_time_t fetched, apr_uint64_t epoch);
/* Drops the customer's kept answer from this process (a failed attempt answered here). */
void bank_bvn_answer_forget(request_rec *r, const char *customer_id);
/* The per-process caches of verified tokens and BVN answers. */
void bank_auth_child_init(apr_pool_t *pchild, server_rec *s);
/* Drops a token from this process's cache (sign-out revoked it). Other processes keep
 * theirs for at most BankTokenCacheSeconds. */
void bank_auth_forget(request_rec *r, const char *token_id);
/* The bearer value of the Authorization header, or NULL if absent or not "Bearer x". */
const char *bank_bearer(request_rec *r);

#endif
