/*
 * blpg_hosts.h
 *	  The "host" server option: one source server, or a list of servers
 *	  that replicate each other (a primary and its replicas), tried in
 *	  order by the worker.  Form: host[:port][,host[:port]...]; an IPv6
 *	  address takes brackets when a port follows ("[::1]:3307").
 */
#ifndef BLPG_HOSTS_H
#define BLPG_HOSTS_H

#include "blpg_shmem.h"

#define BLPG_MAX_HOSTS		16

typedef struct blpg_host
{
	char	   *host;			/* name or address, without brackets */
	int			port;			/* the entry's port, or the default */
	char		label[BLPG_HOST_LEN];	/* host:port, [v6]:port (for messages) */
} blpg_host;

/*
 * Parse a "host" option value; entries without a port get default_port
 * (0: not known yet, as when the validator checks the option alone).
 * Bad forms and duplicate entries are errors naming the entry.  Returns the
 * number of hosts (1..BLPG_MAX_HOSTS), palloc'd in *hosts.
 */
extern int	blpg_hosts_parse(const char *value, int default_port, blpg_host **hosts);

#endif							/* BLPG_HOSTS_H */
