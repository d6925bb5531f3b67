/* Not built yet: answers 503 until its issue lands. */
#include "mod_bank.h"

int bank_bvn_handler(request_rec *r)
{
    return bank_error_unavailable(r, "BVN verification is not enabled yet.", 3600);
}
