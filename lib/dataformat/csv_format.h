/* csv_format.h — numeric CSV's fields: comma separated, each a finite
 * number with spaces or tabs around it allowed. The engine's loader and
 * the daemon's upload check both judge a field and a header line here. */
#ifndef PUNCH_CSV_FORMAT_H
#define PUNCH_CSV_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

/* Field [s, e) as a finite number into *out: 0, or -1 when it is not one
 * (empty, text, out of double's range). */
int csvfmt_number(const char *s, const char *e, double *out);

/* The number of fields of line [s, e) (commas + 1). */
long csvfmt_fields(const char *s, const char *e);

/* The first field of line [s, e) that is not a number: its column from 0,
 * its text in [*bad_s, *bad_e); -1 when every field is one. *fields gets
 * the line's field count. */
long csvfmt_first_bad(const char *s, const char *e, long *fields, const char **bad_s,
                      const char **bad_e);

/* Is every field of line [s, e) a number? (A first line that is not is a
 * header, when the spec leaves it to be recognised.) */
bool csvfmt_all_numbers(const char *s, const char *e);

#endif
