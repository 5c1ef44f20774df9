/* SPDX-License-Identifier: Apache-2.0 */
/* A scrape (mooncake_kv/scrape.h): each store copied under its own lock,
 * then rendered from the copies with no lock held. */
#include <stdlib.h>

#include "kv_render.h"
#include "kv_status_page.h"
#include "kv_store_impl.h"

struct mkv_scrape {
	kv_source_snap *sources;
	size_t n;
};

mkv_scrape *mkv_scrape_new(size_t n_sources)
{
	mkv_scrape *sc = calloc(1, sizeof(*sc));
	if (!sc || !(sc->sources = calloc(n_sources ? n_sources : 1, sizeof(*sc->sources)))) {
		free(sc);
		return NULL;
	}
	sc->n = n_sources;
	return sc;
}

void mkv_scrape_free(mkv_scrape *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->n; i++)
		kv_source_snap_release(&sc->sources[i]);
	free(sc->sources);
	free(sc);
}

enum mkv_err mkv_scrape_store(mkv_scrape *sc, size_t i, const mkv_store *s, const mkv_member_live *live)
{
	return i < sc->n ? kv_store_snapshot(s, live, &sc->sources[i]) : MKV_EINVAL;
}

const double kv_hold_bounds[] = {1e-5, 2.5e-5, 5e-5,  1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
				 5e-3, 0.01,   0.025, 0.05, 0.1,    0.25, 1};
const size_t kv_hold_bounds_n = sizeof(kv_hold_bounds) / sizeof(kv_hold_bounds[0]);

void mkv_scrape_store_held(mkv_store *s, double seconds)
{
	kv_hist_observe(&s->scrape_hold, seconds);
}

/* The exporter's snapshot of the scrape's copies and the limits now. */
static kv_exporter_snap exporter_snap(const mkv_scrape *sc, const mkv_exporter_info *x)
{
	const mkv_budget *b = x->budget;
	return (kv_exporter_snap){
		.info = *x,
		.sources = sc->sources,
		.n_sources = sc->n,
		.tracked_objects = b ? atomic_load(&b->objects) : 0,
		.tracked_tenants = b ? atomic_load(&b->tenants) : 0,
		.max_objects = b ? b->max_objects : 0,
		.max_tenants = b ? b->max_tenants : 0,
		.max_key_groups = b ? b->max_key_groups : 0,
		.tracked_key_groups = b ? atomic_load(&b->key_groups) : 0,
	};
}

enum mkv_err mkv_scrape_render_as(const mkv_scrape *sc, const mkv_exporter_info *x, const mkv_expo_opts *o,
				  mkv_buf *out)
{
	kv_exporter_snap es = exporter_snap(sc, x);
	return kv_render(out, &es, o);
}

enum mkv_err mkv_scrape_render(const mkv_scrape *sc, const mkv_exporter_info *x, mkv_buf *out)
{
	return mkv_scrape_render_as(sc, x, NULL, out);
}

enum mkv_err mkv_scrape_status_html(const mkv_scrape *sc, const mkv_exporter_info *x, const mkv_status_opts *o,
				    mkv_buf *out)
{
	kv_exporter_snap es = exporter_snap(sc, x);
	return kv_status_render(out, &es, o);
}
