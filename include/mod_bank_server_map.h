/* A map of each server (virtual host) to an entry of its own, per child process, under one
 * lock: the bank list's kept answer and the webhook's commit queue each keep one. */
#ifndef MOD_BANK_SERVER_MAP_H
#define MOD_BANK_SERVER_MAP_H

#include <httpd.h>

typedef struct bank_server_map_s bank_server_map_t;

/* A map whose entries are `size` bytes, made zeroed on first use from pchild; NULL if the
 * process has no lock for it (the caller then goes without). */
bank_server_map_t *bank_server_map_make(apr_pool_t *pchild, apr_size_t size);
/* Takes the map's lock and returns s's entry (made now if s has none); NULL (lock not taken)
 * if m is NULL or the lock failed. Every non-NULL return is followed by bank_server_map_unlock. */
void *bank_server_map_lock(bank_server_map_t *m, const server_rec *s);
void bank_server_map_unlock(bank_server_map_t *m);
/* The pool entries are made from (the child's): for what an entry holds for the child's life. */
apr_pool_t *bank_server_map_pool(const bank_server_map_t *m);

#endif
