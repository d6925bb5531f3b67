/* mod_bank_sign_out.c: POST /auth/sign_out, the handler bank-sign-out (docs/api.md). */
#ifndef MOD_BANK_SIGN_OUT_H
#define MOD_BANK_SIGN_OUT_H

#include <httpd.h>

int bank_sign_out_handler(request_rec *r);

#endif
