/* mod_bank_sign_in.c: POST /auth/sign_in (docs/api.md). */
#ifndef MOD_BANK_SIGN_IN_H
#define MOD_BANK_SIGN_IN_H

#include <httpd.h>

int bank_sign_in_handler(request_rec *r);

#endif
