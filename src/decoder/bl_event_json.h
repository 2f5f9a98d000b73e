/*
 * bl_event_json.h
 *	  One decoded event as one line of JSON (the binlogcat output format).
 */
#ifndef BL_EVENT_JSON_H
#define BL_EVENT_JSON_H

#include "bl_decoder.h"

typedef struct bl_jsonl_options
{
	bool		rows_only;		/* skip everything but row changes */
	bool		table_columns;	/* describe the columns of TABLE_MAP events */
} bl_jsonl_options;

/*
 * Append the JSON line (with its newline) of ev to out.  For rows events
 * this iterates the rows.  Returns 0, or -1 with err.
 */
extern int	bl_event_to_jsonl(bl_decoder *dec, bl_event *ev,
							  const bl_jsonl_options *opts, bl_buf *out,
							  bl_error *err);

/* Append s as a JSON string (with quotes); invalid UTF-8 becomes U+FFFD. */
extern void bl_json_put_str(bl_buf *out, const char *s, size_t len);

#endif							/* BL_EVENT_JSON_H */
