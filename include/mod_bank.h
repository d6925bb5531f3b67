/* mod_bank: what every httpd glue file (mod_bank*.c) shares: the module and its log tag.
 * Each glue unit has its own header (mod_bank_<unit>.h); the logic that needs no
 * request_rec lives in the core (bank_*.c, include/bank_*.h). */
#ifndef MOD_BANK_H
#define MOD_BANK_H

#include <httpd.h>
#include <http_config.h>
#include <http_log.h>
#include "bank_log.h" /* BANKLOGNO */

extern module AP_MODULE_DECLARE_DATA bank_module;

#endif
