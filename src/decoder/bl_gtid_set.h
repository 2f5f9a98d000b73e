/*
 * bl_gtid_set.h
 *	  MySQL GTID sets ("uuid:1-5:7,uuid2:tag:1-3", the form gtid_executed
 *	  and PREVIOUS_GTIDS take): parse, membership of one GTID, inclusion of
 *	  one set in another, adding GTIDs and sets, and the set as text.  Used
 *	  to find where a replica that has executed a GTID set must start
 *	  reading, and to keep the set a source has executed (bl_gtid_state.h).
 *	  Sets of any size.
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
/* An empty set; NULL when out of memory. */
extern bl_gtid_set *bl_gtid_set_create(void);
extern void bl_gtid_set_free(bl_gtid_set *set);

/* Add the GTID "uuid:n" or "uuid:tag:n"; -1 (err) if malformed or out of memory. */
extern int	bl_gtid_set_add(bl_gtid_set *set, const char *gtid, bl_error *err);

/* Add every GTID of b to a; -1 (err) when out of memory. */
extern int	bl_gtid_set_union(bl_gtid_set *a, const bl_gtid_set *b, bl_error *err);

/*
 * Append the set's text to out in MySQL's form: members by UUID (lower
 * case, in order), each UUID once with its untagged intervals and then
 * each tag and its intervals ("uuid:1-5:7:blue:1-3,uuid2:4").  Parsing it
 * gives the same set.  -1 when out of memory.
 */
extern int	bl_gtid_set_text(const bl_gtid_set *set, bl_buf *out);

/*
 * Append MySQL's binary form of the set to out (the encoding of
 * PREVIOUS_GTIDS events and of the set a replica sends with
 * COM_BINLOG_DUMP_GTID): the number of members as 8 bytes, then per member
 * its 16-byte UUID, the number of intervals as 8 bytes and each interval
 * as two 8-byte numbers, the first GTID and the one after the last, all
 * little endian.  A set with a tag takes the tagged form of MySQL 8.3+:
 * the count is a format byte 1, 6 bytes of count and the format byte
 * again, and each member's UUID is followed by its tag's length (MySQL's
 * variable-length integer) and bytes (none: untagged).  -1 when out of
 * memory.
 */
extern int	bl_gtid_set_encode(const bl_gtid_set *set, bl_buf *out);

/* Is the GTID "uuid:n" or "uuid:tag:n" in the set? */
extern bool bl_gtid_set_contains(const bl_gtid_set *set, const char *gtid);

/* Is every GTID of a also in b? */
extern bool bl_gtid_set_subset(const bl_gtid_set *a, const bl_gtid_set *b);

/*
 * Append to out the first GTID of a (by member, then number) that b lacks,
 * as "uuid:n" or "uuid:tag:n"; nothing when a is within b.  For messages.
 */
extern void bl_gtid_set_first_missing(const bl_gtid_set *a, const bl_gtid_set *b,
									  bl_buf *out);

/* Number of (uuid, tag) members, for tests. */
extern int	bl_gtid_set_members(const bl_gtid_set *set);

#endif							/* BL_GTID_SET_H */
