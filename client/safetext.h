/* safetext.h — text from the server made safe to print: the one filter
 * every view of punch (tables, logs, comparisons) puts a job's strings
 * through. */
#ifndef PUNCH_SAFETEXT_H
#define PUNCH_SAFETEXT_H

/* Make s safe for a terminal, in place: every control character (C0 such
 * as ESC, BEL, CR and LF; DEL; and C1, U+0080..U+009F in UTF-8) becomes
 * '?'. A job's strings come from other users and from the server; written
 * raw they could move the cursor, retitle the window or hide lines. */
void safetext_clean(char *s);

#endif
