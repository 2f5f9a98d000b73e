/*
 * bl_gtid_state.h
 *	  The GTID state of a replica as it reads a binlog: MariaDB's last GTID
 *	  of each replication domain ("domain-server-seq,..."), or the set of
 *	  MySQL GTIDs executed ("uuid:1-5:7,...", bl_gtid_set.h).  It starts
 *	  from a state's text, takes each committed transaction's GTID and the
 *	  GTID list that opens each binlog file, and gives its text back.  Any
 *	  size: thousands of domains, sets of hundreds of kilobytes.
 *
 * When the state is known.  A MariaDB state records every GTID it is given
 * (a domain's last GTID is the whole truth about that domain) and takes a
 * file's GTID_LIST while it knows no domain.  A MySQL set is only known
 * from a state's text or from a file's PREVIOUS_GTIDS read at the start of
 * that file: before that, GTIDs are not recorded and the text is NULL,
 * because a set missing the transactions before the reader's start would
 * be wrong, not just incomplete.
 *
 * Plain C, no PostgreSQL dependency.
 */
#ifndef BL_GTID_STATE_H
#define BL_GTID_STATE_H

#include "bl_common.h"

/* One MariaDB GTID. */
typedef struct bl_maria_gtid
{
	uint32_t	domain;
	uint32_t	server;
	uint64_t	seq;
} bl_maria_gtid;

/*
 * Parse a MariaDB GTID list ("d-s-n[,d-s-n...]", spaces allowed) into a
 * malloc'd array (*out, free() it; NULL when empty) of *n GTIDs in the
 * list's order.  -1 with err if malformed or out of memory.
 */
extern int	bl_maria_gtid_list_parse(const char *text, size_t len, bl_maria_gtid **out,
									 size_t *n, bl_error *err);

typedef struct bl_gtid_state bl_gtid_state;

/* An unknown state; NULL when out of memory. */
extern bl_gtid_state *bl_gtid_state_create(void);
extern void bl_gtid_state_free(bl_gtid_state *st);

/*
 * Start from a state's text: NULL is not known, "" known and empty, else a
 * MariaDB GTID list (one GTID per domain) or a MySQL GTID set.  -1 with err
 * if malformed (the state is then unknown).
 */
extern int	bl_gtid_state_load(bl_gtid_state *st, const char *text, bl_error *err);

/*
 * A transaction committed: MariaDB GTID domain-server-seq (it replaces the
 * domain's GTID), or MySQL GTID text "uuid:n" / "uuid:tag:n" (joins a known
 * set).  -1 with err if it does not fit the state (a MySQL GTID in a
 * MariaDB state or the reverse, a malformed GTID) or out of memory.
 */
extern int	bl_gtid_state_commit_maria(bl_gtid_state *st, uint32_t domain, uint32_t server,
									   uint64_t seq, bl_error *err);
extern int	bl_gtid_state_commit_mysql(bl_gtid_state *st, const char *gtid, bl_error *err);

/*
 * A binlog file's opening GTID list.  MariaDB GTID_LIST: taken while no
 * domain is known.  MySQL PREVIOUS_GTIDS: joins a known set; taken as the
 * set when none is known and from_file_start (the reader gets every
 * transaction of the file after it).  -1 with err if malformed.
 */
extern int	bl_gtid_state_maria_list(bl_gtid_state *st, const char *text, size_t len,
									 bl_error *err);
extern int	bl_gtid_state_mysql_previous(bl_gtid_state *st, const char *text, size_t len,
										 bool from_file_start, bl_error *err);

/*
 * The state as text (MariaDB: by domain; MySQL: bl_gtid_set_text) in
 * *text, valid until the state changes; NULL when not known.  *len gets its
 * length.  -1 with err when out of memory.
 */
extern int	bl_gtid_state_text(bl_gtid_state *st, const char **text, size_t *len,
							   bl_error *err);

/* Is anything known (a text would not be NULL)? */
extern bool bl_gtid_state_known(const bl_gtid_state *st);

#endif							/* BL_GTID_STATE_H */
