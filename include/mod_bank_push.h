/* httpd glue of push notifications (mod_bank_push.c, docs/push.md): the server-wide BankPush*
 * settings, their check at `apachectl -t`, and the sender's host: a mod_watchdog callback in
 * every child process runs the sender, whose rounds claim due outbox rows, send them to FCM
 * and settle them. The rounds, FCM and the outbox are core (bank_push_sender.h, bank_push.h,
 * bank_store.h). */
#ifndef MOD_BANK_PUSH_H
#define MOD_BANK_PUSH_H

#include <httpd.h>
#include <http_config.h>

/* The directives (mod_bank_config.c parses the numbers). NULL or the error. */
const char *bank_push_set_fcm(cmd_parms *cmd, const char *kind, const char *project,
                              const char *url);
const char *bank_push_set_credentials(cmd_parms *cmd, const char *path);
void bank_push_set_attempts(int n);
void bank_push_set_timeout(int seconds);
void bank_push_set_spare_cpu(int percent);

/* Forgets the previous configuration's settings (a restart reads them again). */
void bank_push_pre_config(void);
/* BankPush without BankPushCredentials: the configuration is refused (also at -t). */
int bank_push_check_config(apr_pool_t *pconf, server_rec *s);
/* Starts the sender's watchdog when push is on; says at start-up whether it is. */
int bank_push_post_config(apr_pool_t *pconf, server_rec *s);
/* A process that exits waits for its sender's round to end (and starts none after): httpd
 * ends the process without joining mod_watchdog's thread, which would leave a round's messages
 * sent and not recorded, to go out again after their lease. */
void bank_push_child_init(apr_pool_t *pchild, server_rec *s);
/* Outbox rows were committed in this process: the sender looks now, not at its next tick. */
void bank_push_wake(void);
/* For GET /health: "none" (push off), "ok", or "backlog" (rows waiting longer than they
 * should: the sender is behind, or FCM unreachable). */
const char *bank_push_status(void);

#endif
