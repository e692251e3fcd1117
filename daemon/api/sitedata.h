/* sitedata.h — the site's datasets (installed by the admin under the
 * `datasets` roots) as submit sees them: a name that can match nothing
 * there is refused before the job waits in the queue. */
#ifndef PUNCH_SITEDATA_H
#define PUNCH_SITEDATA_H

#include <stdbool.h>

/* Could name (accepted by spec_dataset_name_ok) resolve under one of roots
 * (colon-separated)? False only when no root can hold it: its directory is
 * missing everywhere, or holds no entry whose first part (up to the first
 * '.' or '-') is that of name's last component. Which files a name means
 * (suffixes, IDX pairs, CIFAR-10 batches) stays the engine's decision when
 * the job runs; this is only what every one of those rules needs. A root
 * that cannot be read (other than missing) answers true: the engine, which
 * may run as another user, decides. */
bool sitedata_may_exist(const char *roots, const char *name);

#endif
