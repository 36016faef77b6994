"""Index bench_index.py's synthetic pages with the store.lsh of CHECKOUT and print (and write to OUT.json) digests of
what the index gives: every candidate pair row, the verified pairs, the clusters, the links, the stored pages and 200
lookups, and of every stored row (pages with their signatures, anchor keys and verification sets, clusters, counters;
the band index's segments, blocks and recent runs: the same bytes, not only the same answers; a page's
verification set is digested with the page's doc wherever the schema keeps it). Two checkouts that give
the same file find the same candidates and build the same clusters. ``pages_h`` (pages, verification sets, clusters)
and ``band_rows_h`` (the set of band and anchor key rows) leave out what a change of the band index's layout moves
(page key rows, filters, the state tokens made from the rows): two layouts that store the same pages and key rows
give the same values.

    python bench/index_identity.py CHECKOUT N RECENT_PAGES OUT.json [--filter-memory-bytes B] [--verify-bytes B]

N pages in batches of 200 inside extract's growing transactions, RECENT_PAGES as given (small: many flushes and
merges of segments), and halfway a few pages removed (their rows leave the band index).
"""
import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("checkout", help="the checkout whose store.lsh (and bench/bench_index.py) is used")
parser.add_argument("n", type=int, help="pages (a multiple of 200)")
parser.add_argument("recent_pages", type=int, help="RECENT_PAGES for this run")
parser.add_argument("out", help="JSON file of the digests")
parser.add_argument("--filter-memory-bytes", type=int, default=None,
                    help="FILTER_MEMORY_BYTES for this run (small: filters shared, thinned, rebuilt as the index grows)")
parser.add_argument("--verify-bytes", type=int, default=None,
                    help="VERIFY_BYTES for this run (small: each batch's candidates verified in many slices; a "
                         "checkout without the setting ignores it)")
cli = parser.parse_args()
checkout, n, recent, out = cli.checkout, cli.n, cli.recent_pages, cli.out
sys.path.insert(0, checkout)
sys.path.insert(0, checkout + "/bench")
import numpy as np  # noqa: E402
from store import lsh  # noqa: E402
from store.db import open_db
from store.lsh import IndexedPage
from templater.pipeline import GrowingBatch
from templater.shingles import ShingleSettings, Signatures
import bench_index as b
lsh.RECENT_PAGES = recent
if cli.filter_memory_bytes is not None:
    lsh.FILTER_MEMORY_BYTES = cli.filter_memory_bytes
if cli.verify_bytes is not None:
    lsh.VERIFY_BYTES = cli.verify_bytes
settings = ShingleSettings()
args = type("A", (), dict(dup_share=0.1, set_size=1000, verify="sample", sample=settings.sample))()
db = open_db(Path(tempfile.mkdtemp()) / "i.db")
rng = np.random.default_rng(b.SEED)
pool = b.Pool(settings.permutations, 1000)
growing = GrowingBatch(db)
for start in range(0, n, 200):
    values, shingles, sets, dups, anchors = b.make_batch(rng, 200, pool, args, settings)
    pages = [IndexedPage(b.page_id(i), b.page_id(i)) for i in range(start, start + 200)]
    growing.begin()
    lsh.add_signatures(db, pages, Signatures(values, np.zeros(200, bool), settings, anchors), shingles=shingles)
    growing.step(200)
    pool.push(values, sets)
    if start == n // 2:  # remove a few pages: their rows leave the band index
        growing.commit()
        lsh.remove_pages(db, [b.page_id(i) for i in range(0, start, 997)])
growing.commit()
pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)) or [np.empty((0, 2), np.int64)])
codes = np.sort((pairs[:, 0] << 31) | pairs[:, 1])
verified = sorted((int(x), int(y), round(float(s), 9)) for a, bb, sims in lsh.iter_verified_pairs(db)
                  for x, y, s in zip(a, bb, sims))
clusters = [(label, [m.doc for m in members]) for label, members in lsh.iter_clusters(db)]
links = db.conn.execute("SELECT doc, other FROM lsh_links ORDER BY 1, 2").fetchall()
sig = db.conn.execute("SELECT doc, page_id, cluster FROM lsh_signatures ORDER BY doc").fetchall()
rng2 = np.random.default_rng(5)
queries = []
for doc in rng2.integers(1, n, size=200).tolist():
    row = db.conn.execute("SELECT signature FROM lsh_signatures WHERE doc = ?", [doc]).fetchone()
    if row:
        queries.append([doc, [(m.doc, round(s, 9)) for m, s in lsh.query(db, np.frombuffer(row[0], np.uint32), settings,
                       shingle_set=lsh.stored_sets(db, [doc], settings).get(doc), exclude=doc)]])
h = lambda x: hashlib.sha256(json.dumps(x).encode()).hexdigest()[:16]
def table_h(sql):
    digest = hashlib.sha256()
    for row in db.conn.execute(sql):
        digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


page_columns = [c[1] for c in db.conn.execute("PRAGMA table_info(lsh_signatures)") if c[1] != "hashes"]
sets_sql = "SELECT doc, hashes FROM lsh_shingles"  # where the verification sets are: migration 7 moved new ones
if "hashes" in [c[1] for c in db.conn.execute("PRAGMA table_info(lsh_signatures)")]:  # into the page rows
    sets_sql += " UNION ALL SELECT doc, hashes FROM lsh_signatures WHERE hashes IS NOT NULL"
stored_h = table_h(f"SELECT {', '.join(page_columns)} FROM lsh_signatures ORDER BY doc") \
    + table_h(f"SELECT * FROM ({sets_sql}) ORDER BY doc") \
    + table_h("SELECT * FROM dup_clusters ORDER BY cluster") + table_h("SELECT * FROM lsh_state ORDER BY name")
band_h = table_h("SELECT * FROM lsh_segments ORDER BY segment") + table_h("SELECT * FROM lsh_blocks ORDER BY id") \
    + table_h("SELECT * FROM lsh_runs ORDER BY run")
pages_h = table_h(f"SELECT {', '.join(page_columns)} FROM lsh_signatures ORDER BY doc") \
    + table_h(f"SELECT * FROM ({sets_sql}) ORDER BY doc") + table_h("SELECT * FROM dup_clusters ORDER BY cluster")
band_rows = [np.empty((0, 2), np.int64)]  # the band and anchor key rows as a set, wherever the layout keeps them
for table in ("lsh_blocks", "lsh_runs"):
    for key_blob, doc_blob in db.conn.execute(f"SELECT keys, docs FROM {table}"):
        band_rows.append(np.stack((np.frombuffer(key_blob, np.int64), np.frombuffer(doc_blob, np.int64)), axis=1))
band_rows = np.concatenate(band_rows)
band_rows = np.unique(band_rows[band_rows[:, 0] < 1 << 47], axis=0)  # (page keys, from 2**47 up: not band rows)
res = {"candidate_rows": len(codes), "candidates": hashlib.sha256(codes.tobytes()).hexdigest()[:16],
       "distinct": int(len(np.unique(codes))), "verified": len(verified), "verified_h": h(verified),
       "clusters": len(clusters), "clusters_h": h(clusters), "links_h": h(links), "signatures_h": h(sig),
       "queries_h": h(queries), "pages_h": pages_h,
       "band_rows_h": hashlib.sha256(band_rows.tobytes()).hexdigest()[:16], "stored_h": stored_h, "band_index_h": band_h, "stats": lsh.stats(db)}
json.dump(res, open(out, "w"), indent=1)
print(res)
