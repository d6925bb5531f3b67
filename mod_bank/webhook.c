/* Not built yet: answers 503 until its issue lands. */
#include "mod_bank.h"

int bank_webhook_handler(request_rec *r)
{
    return bank_error_unavailable(r, "The payment notification webhook is not enabled yet.", 3600);
}
