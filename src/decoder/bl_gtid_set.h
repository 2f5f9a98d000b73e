/*
 * bl_gtid_set.h
 *	  MySQL GTID sets as text ("uuid:1-5:7,uuid2:tag:1-3", the form
 *	  gtid_executed and PREVIOUS_GTIDS take): parse, membership of one GTID,
 *	  and inclusion of one set in another.  Used to find where a replica
 *	  that has executed a GTID set must start reading.
 *
 * Plain C, no PostgreSQL dependency.  Tags (MySQL 8.3+) are part of the
 * key: "uuid:tag:n" is a different GTID from "uuid:n".  UUIDs and tags
 * compare case-insensitively.
 */
#ifndef BL_GTID_SET_H
#define BL_GTID_SET_H

#include "bl_common.h"

typedef struct bl_gtid_set bl_gtid_set;

/* Parse a set; NULL with err set when the text is not a GTID set. */
extern bl_gtid_set *bl_gtid_set_parse(const char *text, size_t len, bl_error *err);
extern void bl_gtid_set_free(bl_gtid_set *set);

/* Is the GTID "uuid:n" or "uuid:tag:n" in the set? */
extern bool bl_gtid_set_contains(const bl_gtid_set *set, const char *gtid);

/* Is every GTID of a also in b? */
extern bool bl_gtid_set_subset(const bl_gtid_set *a, const bl_gtid_set *b);

/* Number of (uuid, tag) members, for tests. */
extern int	bl_gtid_set_members(const bl_gtid_set *set);

#endif							/* BL_GTID_SET_H */
