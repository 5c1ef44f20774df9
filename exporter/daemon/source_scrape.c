/* SPDX-License-Identifier: Apache-2.0 */
/* A scrape's copy of one source: the members' backlogs read, then the
 * store copied under the source's lock, the hold measured. */
#include <stdlib.h>

#include "kv_clock.h"
#include "kv_source_impl.h"

int kvd_source_scrape(kvd_source *s, mkv_scrape *sc, size_t i)
{
	mkv_member_live *live = calloc(s->n_members, sizeof(*live));
	if (!live)
		return MKV_ENOMEM;
	for (size_t k = 0; k < s->n_members; k++)
		live[k] = (mkv_member_live){
			.backlog = atomic_load_explicit(&s->members[k].backlog, memory_order_relaxed)};
	pthread_mutex_lock(&s->lock);
	double t0 = kvd_mono();
	int rc = mkv_scrape_store(sc, i, s->store, live);
	mkv_scrape_store_held(s->store, kvd_mono() - t0);
	pthread_mutex_unlock(&s->lock);
	free(live);
	return rc;
}
