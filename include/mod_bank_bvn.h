/* mod_bank_bvn.c: POST /onboarding/bvn (docs/api.md). */
#ifndef MOD_BANK_BVN_H
#define MOD_BANK_BVN_H

#include <httpd.h>

int bank_bvn_handler(request_rec *r);

#endif
