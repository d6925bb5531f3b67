/* httpd glue of BVN verification by an identity provider (mod_bank_idp.c): the Location's
 * provider settings, one libcurl handle per thread, the server's circuit breaker, the log
 * lines and the 503 answers. The dialects and the client are core (bank_idp.h). */
#ifndef MOD_BANK_IDP_H
#define MOD_BANK_IDP_H

#include "mod_bank.h"
#include "mod_bank_config.h"
#include "bank_idp.h"
#include "bank_onboard.h"

/* The provider of the request's Location; BANK_IDP_TABLE for the bvn_records table. */
bank_idp_kind bank_idp_kind_of(request_rec *r);
/* For bank_onboard (bank_onboard_provider_t.ask): the Location's provider asked about a BVN,
 * its verdict as the onboarding rule knows verdicts. baton is a bank_idp_onboard_t. */
typedef struct {
    request_rec *r;
    int retry_after; /* BANK_RECORD_UNAVAILABLE: for the 503's Retry-After */
    const char *why; /* a mismatch: the provider's reason, for the log */
} bank_idp_onboard_t;
bank_record_verdict bank_idp_onboard_ask(void *baton, const char *bvn, const char *dob,
                                         const bank_customer_t *customer, const char **first,
                                         const char **last);
/* For bank_onboard (bank_onboard_provider_t.hold): sleeps for one of the durations of the
 * provider's latest answers, drawn at random (BANK_IDP_HOLD_FALLBACK ms before any). */
void bank_idp_onboard_hold(void *baton);
/* The 503 of BANK_RECORD_UNAVAILABLE. */
int bank_idp_unavailable(request_rec *r, const bank_idp_onboard_t *b);

/* libcurl's global set-up and the circuit breaker's shared memory, in the parent before
 * any child exists. */
int bank_idp_post_config(apr_pool_t *pconf, server_rec *s);
/* For GET /health: "none" (no provider configured), "circuit_open" (the breaker of a
 * provider refuses calls now) or "ok". */
const char *bank_idp_health(void);

#endif
