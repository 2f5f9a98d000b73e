/*
 * bl_decimal.h
 *	  MySQL's binary DECIMAL format (NEWDECIMAL columns and DECIMAL values
 *	  inside binary JSON) to exact decimal text.
 */
#ifndef BL_DECIMAL_H
#define BL_DECIMAL_H

#include "bl_common.h"

/* Bytes a DECIMAL(precision, scale) takes in a row image. */
extern int	bl_decimal_binary_size(int precision, int scale);

/*
 * Append the exact text of a binary decimal ("-123.4500") to out.  len must
 * be bl_decimal_binary_size(precision, scale).  Returns 0, or -1 if the
 * bytes are not a valid decimal (a digit group over 999999999).
 */
extern int	bl_decimal_to_text(const uint8_t *data, size_t len, int precision,
							   int scale, bl_buf *out);

#endif							/* BL_DECIMAL_H */
