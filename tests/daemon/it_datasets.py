"""it_datasets.py — uploaded datasets against a real punchcardd: PUT streams
the body to disk with its SHA-256 and a format check (npz, CSV, IDX gzipped
or not, CIFAR-10, safetensors), the same name replaces (200), bad names and
broken files are 400s naming the problem, the per-upload limit is a 413
(declared or chunked) and the per-user quota a 507; one user's uploads are
invisible to another (404, as for jobs) and an admin lists everyone's.
Runs with --hold: no job runs here (it_data_jobs.py uses uploads in jobs)."""
import gzip
import hashlib
import io
import os
import struct

import punchtest
from punchtest import Daemon, check, expect_error

np = punchtest.require_numpy()


def npz_bytes(compressed=False, **arrays):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def images(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, size=(n, 6, 6), dtype=np.uint8),
            rng.integers(0, 3, size=n).astype(np.int64))


def put(d, user, name, body, **kw):
    return d.req("PUT", "/api/v1/datasets/" + name, user, body=body,
                 headers={"Content-Type": "application/octet-stream"}, **kw)


def leftovers(d):
    """Temporary upload files still on disk."""
    top = os.path.join(d.data_dir, "uploads")
    return [f for _, _, files in os.walk(top) for f in files if f.startswith(".")]


def cases():
    d = Daemon(["--hold", "--upload-max", "200000", "--upload-quota", "400000"])
    d.args += ["--datasets", site_roots(d.tmp)]
    with d:
        punchtest.case("npz upload, replace, list, get", upload_npz, d)
        punchtest.case("names", names, d)
        punchtest.case("broken files name the problem", broken, d)
        punchtest.case("other formats", formats, d)
        punchtest.case("users cannot see each other's", isolation, d)
        punchtest.case("upload limit and quota", limits, d)
        punchtest.case("delete", delete, d)
        punchtest.case("punch data push, list, rm", punch_data, d)
        punchtest.case("a job's spec as written, and resolved", spec_round_trip, d)
        punchtest.case("site datasets listed", site_list, d)
        punchtest.case("no temporary files left", lambda: check(not leftovers(d),
                                                                "left: %s" % leftovers(d)))


def idx_file(dims):
    head = struct.pack(">BBBB", 0, 0, 8, len(dims)) + b"".join(struct.pack(">I", n)
                                                               for n in dims)
    return head + bytes(int(np.prod(dims)))


def site_roots(tmp):
    """Two dataset roots: an IDX pair (images gzipped), an images file
    without labels, an npz, a CSV, CIFAR-10 batches, a hidden file, a
    symlink out of the root; the second root repeats the npz's name."""
    one, two, out = (os.path.join(tmp, n) for n in ("site1", "site2", "outside"))
    for p in (os.path.join(one, "pets"), os.path.join(one, "cif"), two, out):
        os.makedirs(p)
    with gzip.open(os.path.join(one, "pets", "tiny-images-idx3-ubyte.gz"), "wb") as f:
        f.write(idx_file([5, 4, 4]))
    for name, blob in (("pets/tiny-labels-idx1-ubyte", idx_file([5])),
                       ("pets/lone-images-idx3-ubyte", idx_file([2, 4, 4])),
                       ("tab.npz", npz_bytes(x_train=np.zeros((7, 3)), y_train=np.zeros(7))),
                       ("table.csv", b"1,2\n3,4\n"), (".hidden.npz", npz_bytes(x=np.zeros(2))),
                       ("cif/data_batch_1.bin", bytes(2 * 3073)),
                       ("cif/test_batch.bin", bytes(3073))):
        with open(os.path.join(one, name), "wb") as f:
            f.write(blob)
    with open(os.path.join(out, "secret.npz"), "wb") as f:
        f.write(npz_bytes(x=np.zeros(3)))
    os.symlink(out, os.path.join(one, "escape"))
    with open(os.path.join(two, "tab.npz"), "wb") as f:
        f.write(npz_bytes(x=np.zeros((9, 2)), y=np.zeros(9)))
    with open(os.path.join(two, "extra.csv.gz"), "wb") as f:
        f.write(gzip.compress(b"1,2\n"))
    return one + ":" + two


def site_list(d):
    """?site=1 lists the roots' datasets by the names jobs write, for any
    user, bounded by limit; nothing hidden or outside a root."""
    r = d.req("GET", "/api/v1/datasets?site=1", "bob")
    check(r.status_code == 200, r.text)
    got = {e["name"]: e for e in r.json()["datasets"]}
    check(sorted(got) == ["cif/test", "cif/train", "extra", "pets/tiny", "tab", "table"],
          sorted(got))
    check(r.json()["truncated"] is False, r.json())
    check(got["pets/tiny"] == {"name": "pets/tiny", "format": "idx", "records": 5,
                               "shapes": {"images": [5, 4, 4], "labels": [5]}}, got)
    check(got["tab"]["format"] == "npz" and got["tab"]["records"] == 7
          and got["tab"]["shapes"] == {"x_train": [7, 3], "y_train": [7]}, got["tab"])
    check(got["table"]["format"] == "csv" and got["table"]["records"] is None, got["table"])
    check(got["cif/train"]["records"] == 2 and got["cif/test"]["shapes"] ==
          {"images": [1, 3, 32, 32]}, got)
    r = d.req("GET", "/api/v1/datasets?site=1&limit=2", "alice").json()
    check(len(r["datasets"]) == 2 and r["truncated"] is True, r)
    expect_error(d.req("GET", "/api/v1/datasets?site=1&limit=0", "alice"), 400, "limit 0")
    p = d.punch("bob", "data", "list", "--site")
    check(p.returncode == 0 and "pets/tiny" in p.stdout and "images [5,4,4] labels [5]"
          in p.stdout and "6 site datasets" in p.stdout, p.stdout + p.stderr)


# A spec as a user types it: spacing, key order, a float that binary64
# cannot hold exactly, an upload by name (issue 31 #3).
WRITTEN = """{"name": "round-trip",
  "model": {"input": [2], "layers": [{"type": "dense", "units": 3, "activation": "softmax"}]},
  "data": {"format": "csv", "train": "@spec-table.csv", "header": true, "num_classes": 3,
           "validation_split": 0.2},
  "training": {"epochs": 1, "batch_size": 2}}"""


def spec_round_trip(d):
    """GET .../spec is the text as submitted, which submits again as it is;
    ?resolved=1 is what runs, the upload's name resolved to its file."""
    r = put(d, "alice", "spec-table.csv", b"label,a,b\n1,0.5,2\n0,1,-4\n2,3,4\n1,2,2\n0,0,1\n")
    punchtest.require(r.status_code == 201, "upload: %d %s" % (r.status_code, r.text))
    r = d.req("POST", "/api/v1/jobs", "alice", body=WRITTEN)
    punchtest.require(r.status_code == 201, "submit: %d %s" % (r.status_code, r.text))
    jid = r.json()["id"]
    r = d.req("GET", "/api/v1/jobs/%s/spec" % jid, "alice")
    check(r.status_code == 200 and r.text == WRITTEN, "as written: %r" % r.text)
    check(r.headers["Content-Type"].startswith("application/json"), r.headers)
    r = d.req("GET", "/api/v1/jobs/%s/spec?resolved=1" % jid, "alice")
    resolved = r.json()
    check(resolved["data"]["train"].startswith("@/") and
          resolved["data"]["train"].endswith("/spec-table.csv"), resolved["data"])
    again = d.req("POST", "/api/v1/jobs", "alice", body=d.req(
        "GET", "/api/v1/jobs/%s/spec" % jid, "alice").text)
    check(again.status_code == 201, "resubmit as written: %d %s" % (again.status_code, again.text))
    expect_error(d.req("GET", "/api/v1/jobs/%s/spec" % jid, "bob"), 404, "bob reads the spec")
    for j in [jid] + ([again.json()["id"]] if again.status_code == 201 else []):
        d.req("POST", "/api/v1/jobs/%s/cancel" % j, "alice")


def upload_npz(d):
    x, y = images(120)
    xt, yt = images(30, seed=1)
    blob = npz_bytes(x_train=x, y_train=y, x_test=xt, y_test=yt)
    r = put(d, "alice", "fm", blob)
    check(r.status_code == 201, "first upload: %d %s" % (r.status_code, r.text))
    o = r.json()
    check(o["name"] == "fm" and o["format"] == "npz" and o["bytes"] == len(blob), o)
    check(o["sha256"] == hashlib.sha256(blob).hexdigest(), "sha256 %s" % o["sha256"])
    check(o["records"] == 120, o)
    check(o["shapes"] == {"x_train": [120, 6, 6], "y_train": [120], "x_test": [30, 6, 6],
                          "y_test": [30]}, o["shapes"])
    # The same name again replaces it; compressed members are checked too.
    blob2 = npz_bytes(compressed=True, x=x[:50], y=y[:50])
    r = put(d, "alice", "fm", blob2)
    check(r.status_code == 200, "replace: %d %s" % (r.status_code, r.text))
    check(r.json()["sha256"] == hashlib.sha256(blob2).hexdigest() and r.json()["records"] == 50,
          r.text)
    got = d.req("GET", "/api/v1/datasets/fm", "alice").json()
    check(got["shapes"] == {"x": [50, 6, 6], "y": [50]} and got["bytes"] == len(blob2), got)
    listing = d.req("GET", "/api/v1/datasets", "alice").json()
    names = [(e["name"], e["sha256"]) for e in listing["datasets"]]
    check(names == [("fm", hashlib.sha256(blob2).hexdigest())], listing)
    check("owner" not in listing["datasets"][0] and "created_at" in listing["datasets"][0],
          listing)
    check(listing["used_bytes"] == len(blob2), listing)
    path = os.path.join(d.data_dir, "uploads",
                        hashlib.sha256(b"alice").hexdigest(), "fm")
    with open(path, "rb") as f:
        check(f.read() == blob2, "the file on disk is the upload")


def names(d):
    x, y = images(4)
    blob = npz_bytes(x=x, y=y)
    for bad in ("a%20b", ".hidden", "x" * 65, "%C3%A9t%C3%A9", "a:b"):
        e = expect_error(put(d, "alice", bad, blob), 400, "name " + bad)
        check("dataset name" in e["error"], e)
    for good in ("A-z_0.9", "x" * 64):
        r = put(d, "alice", good, blob)
        check(r.status_code == 201, "%s: %d %s" % (good, r.status_code, r.text))
        check(d.req("DELETE", "/api/v1/datasets/" + good, "alice").status_code == 200, good)
    # A slash, escaped or not, is a path separator: no such route.
    expect_error(put(d, "alice", "a%2Fb", blob), 404, "escaped slash")
    e = expect_error(put(d, None, "fm", blob), 401, "no secret")
    check("secret" in e["error"], e)


def broken(d):
    x, y = images(120)
    good = npz_bytes(x_train=x, y_train=y)
    e = expect_error(put(d, "alice", "cut", good[:len(good) // 2]), 400, "truncated npz")
    check(e["error"].startswith("npz: "), e)
    # The directory survives, the member's data do not: cut inside x_train.
    start = good.index(b"x_train.npy") + len("x_train.npy")
    damaged = bytearray(good)
    damaged[start + 300] ^= 0xff
    e = expect_error(put(d, "alice", "crc", bytes(damaged)), 400, "flipped byte")
    check("member x_train" in e["error"] and "CRC" in e["error"], e)
    e = expect_error(put(d, "alice", "rows", npz_bytes(x_train=x, y_train=y[:119])), 400,
                     "row mismatch")
    check(e["error"] == "npz: x_train has 120 rows but y_train 119", e)
    e = expect_error(put(d, "alice", "half", npz_bytes(x_train=x)), 400, "x without y")
    check(e["error"] == "npz: x_train without y_train", e)
    e = expect_error(put(d, "alice", "strs", npz_bytes(x=np.array(["a"] * 120), y=y)), 400,
                     "strings")
    check("dtype" in e["error"], e)
    # A ZIP member whose .npy says more data than it holds.
    arr = io.BytesIO()
    np.save(arr, x)
    npy = arr.getvalue()[:-10]
    import zipfile
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("x.npy", npy)
        zf.writestr("y.npy", _npy(y))
    e = expect_error(put(d, "alice", "short", z.getvalue()), 400, "short member")
    check(e["error"].startswith("npz: member x: ") and "truncated" in e["error"], e)
    e = expect_error(put(d, "alice", "empty", b""), 400, "empty")
    check("empty" in e["error"], e)
    e = expect_error(put(d, "alice", "csvbad", b"1,2,3\n4,5\n"), 400, "ragged csv")
    check(e["error"] == "csv: line 2: 2 fields, expected 3", e)
    e = expect_error(put(d, "alice", "ctfbad", b"0 |x 1:1 |y 1 0\n0 x 2:1\n"), 400, "bad ctf")
    check(e["error"] == "ctf: line 2: expected [SEQID] |name values ...", e)
    e = expect_error(put(d, "alice", "txtbad", b"ab cd\nef gh\n\xff\n"), 400, "bad utf-8")
    check(e["error"] == "text: line 3: invalid UTF-8 (byte 0xff)", e)
    e = expect_error(put(d, "alice", "lenbad", npz_bytes(x=np.ones((3, 5), np.int8),
                                                         y=np.zeros(3), len=np.ones(2))),
                     400, "npz len")
    check(e["error"] == "npz: len must be [N] with x's 3 rows", e)
    idx = struct.pack(">IIII", 0x803, 10, 4, 4) + bytes(16 * 9)
    e = expect_error(put(d, "alice", "idxcut", idx), 400, "truncated IDX")
    check(e["error"] == "idx: truncated after 9 of 10 records", e)
    e = expect_error(put(d, "alice", "idxgz", gzip.compress(idx + bytes(16))[:-12]), 400,
                     "cut gzip")
    check(e["error"].startswith("idx: "), e)
    cifar = bytearray(3073 * 2)
    cifar[3073] = 12
    e = expect_error(put(d, "alice", "cifarbad", bytes(cifar)), 400, "CIFAR label")
    check(e["error"] == "cifar10: record 2: label 12 out of range [0, 10)", e)
    listing = d.req("GET", "/api/v1/datasets", "alice").json()["datasets"]
    check([e["name"] for e in listing] == ["fm"], "refused uploads stored: %s" % listing)


def _npy(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def formats(d):
    idx = struct.pack(">IIII", 0x803, 10, 4, 4) + bytes(range(160))
    labels = struct.pack(">II", 0x801, 10) + bytes(range(10))
    cifar = bytearray(3073 * 3)
    cifar[3073] = 9
    csv = b"label,a,b\n1,0.5,2\n0,1e3,-4\r\n\n2,3,4"
    st_header = b'{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
    safet = struct.pack("<Q", len(st_header)) + st_header + bytes(16)
    want = {
        "idx": (idx, "idx", 10, {"images": [10, 4, 4]}),
        "idxgz": (gzip.compress(idx), "idx", 10, {"images": [10, 4, 4]}),
        "labels": (gzip.compress(labels), "idx", 10, {"labels": [10]}),
        "cifar": (bytes(cifar), "cifar10", 3, {"images": [3, 3, 32, 32]}),
        "table.csv": (csv, "csv", 3, {"rows": [3, 3], "header": True}),
        "tablegz": (gzip.compress(csv), "csv", 3, {"rows": [3, 3], "header": True}),
        "w.safetensors": (safet, "safetensors", None, {"w": [2, 2]}),
        "w.npz": (npz_bytes(dense_kernel=np.zeros((3, 2), np.float32)), "npz", None,
                  {"dense_kernel": [3, 2]}),
        # Sequences (issue 28): token ids of any integer width, float16
        # labels, lengths; the CNTK notebook's CTF; a UTF-8 corpus.
        "tok.npz": (npz_bytes(x=np.ones((4, 7), np.int16), y=np.zeros(4, np.float16),
                              len=np.full(4, 7, np.uint8)), "npz", 4,
                    {"x": [4, 7], "y": [4], "len": [4]}),
        "nb.ctf": (b"0 |x 560:1 |y 1 0\n0 |x 0:1\n\n1 |x 3:1 |y 0 1\n", "ctf", 2,
                   {"sequences": 2, "lines": 4}),
        "corpus.txt": ("h\u00e9llo w\u00f6rld\nabc\n".encode(), "text", None, {"chars": 16}),
        "corpusgz": (gzip.compress(b"one two\nthree\n"), "text", None, {"chars": 14}),
    }
    for name, (blob, fmt, records, shapes) in want.items():
        r = put(d, "bob", name, blob)
        if not check(r.status_code == 201, "%s: %d %s" % (name, r.status_code, r.text)):
            continue
        o = r.json()
        check((o["format"], o["records"], o["shapes"]) == (fmt, records, shapes),
              "%s: %s" % (name, o))
    got = sorted(e["name"] for e in d.req("GET", "/api/v1/datasets", "bob").json()["datasets"])
    check(got == sorted(want), got)
    for name in want:
        d.req("DELETE", "/api/v1/datasets/" + name, "bob")


def isolation(d):
    x, y = images(10)
    check(put(d, "bob", "mine", npz_bytes(x=x, y=y)).status_code == 201, "bob uploads")
    # alice's "fm" is unknown to bob, exactly like a name nobody has.
    for method in ("GET", "DELETE"):
        theirs = expect_error(d.req(method, "/api/v1/datasets/fm", "bob"), 404, method)
        nobody = expect_error(d.req(method, "/api/v1/datasets/zz", "bob"), 404, method)
        check(theirs["error"].replace("fm", "N") == nobody["error"].replace("zz", "N"),
              "%s vs %s" % (theirs, nobody))
    check(d.req("GET", "/api/v1/datasets/fm", "alice").status_code == 200, "alice's fm stayed")
    names = [e["name"] for e in d.req("GET", "/api/v1/datasets", "bob").json()["datasets"]]
    check(names == ["mine"], names)
    # The same name for two users is two datasets.
    r = put(d, "bob", "fm", npz_bytes(x=x, y=y))
    check(r.status_code == 201, "bob's own fm: %d %s" % (r.status_code, r.text))
    everyone = d.req("GET", "/api/v1/datasets", "root").json()["datasets"]
    owners = sorted((e["owner"], e["name"]) for e in everyone)
    check(owners == [("alice", "fm"), ("bob", "fm"), ("bob", "mine")], owners)
    d.req("DELETE", "/api/v1/datasets/fm", "bob")
    d.req("DELETE", "/api/v1/datasets/mine", "bob")


def limits(d):
    # --upload-max 200000: declared lengths over it are refused unread ...
    e = expect_error(put(d, "bob", "big", bytes(200001)), 413, "declared over the limit")
    check("upload_max" in e["error"], e)
    # ... and a chunked body (no length) once it passes it.
    def chunks():
        for _ in range(30):
            yield bytes(10000)
    r = d.session.put(d.url + "/api/v1/datasets/big", data=chunks(),
                      headers=punchtest.bearer(d.secrets["bob"]), timeout=30)
    e = expect_error(r, 413, "chunked over the limit")
    check("upload_max" in e["error"], e)
    # --upload-quota 400000: alice has one small upload; two of 150 kB fit,
    # a third does not, and replacing one counts only the new size.
    x = np.zeros((150, 1000), np.uint8)
    y = np.zeros(150, np.uint8)
    blob = npz_bytes(x=x, y=y)
    check(put(d, "alice", "q1", blob).status_code == 201, "q1")
    check(put(d, "alice", "q2", blob).status_code == 201, "q2")
    e = expect_error(put(d, "alice", "q3", blob), 507, "over the quota")
    check("upload_quota" in e["error"], e)
    check(put(d, "alice", "q2", blob).status_code == 200, "replacing within the quota")
    check(d.req("GET", "/api/v1/datasets/q3", "alice").status_code == 404, "q3 not stored")
    # The quota is per user.
    check(put(d, "bob", "q3", blob).status_code == 201, "bob's quota is his own")
    for user, name in (("alice", "q1"), ("alice", "q2"), ("bob", "q3")):
        d.req("DELETE", "/api/v1/datasets/" + name, user)


def delete(d):
    path = os.path.join(d.data_dir, "uploads", hashlib.sha256(b"alice").hexdigest(), "fm")
    check(os.path.exists(path), "alice's fm on disk")
    r = d.req("DELETE", "/api/v1/datasets/fm", "alice")
    check(r.status_code == 200 and r.json()["deleted"] is True, r.text)
    check(not os.path.exists(path), "the file is removed")
    expect_error(d.req("GET", "/api/v1/datasets/fm", "alice"), 404, "deleted")
    expect_error(d.req("DELETE", "/api/v1/datasets/fm", "alice"), 404, "deleted twice")


def punch_data(d):
    x, y = images(200)
    path = os.path.join(d.tmp, "mine.npz")
    with open(path, "wb") as f:
        f.write(npz_bytes(x_train=x, y_train=y))
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    p = d.punch("alice", "data", "push", path)
    check(p.returncode == 0, "push: %d %s %s" % (p.returncode, p.stdout, p.stderr))
    check("sha256 here:   " + digest in p.stdout and "sha256 server: " + digest in p.stdout
          and "match" in p.stdout and "200 records" in p.stdout, p.stdout)
    p = d.punch("alice", "data", "push", path, "other")
    check(p.returncode == 0 and "other: npz" in p.stdout, p.stdout + p.stderr)
    p = d.punch("alice", "data", "list")
    check(p.returncode == 0 and "mine.npz" in p.stdout and "other" in p.stdout
          and digest in p.stdout, p.stdout)
    p = d.punch("bob", "data", "list")
    check(p.returncode == 0 and "mine.npz" not in p.stdout, p.stdout)
    p = d.punch("bob", "data", "rm", "other")
    check(p.returncode == 5, "bob removes alice's: %d %s" % (p.returncode, p.stderr))
    bad = os.path.join(d.tmp, "bad.npz")
    with open(path, "rb") as f, open(bad, "wb") as g:
        g.write(f.read()[:3000])
    p = d.punch("alice", "data", "push", bad)
    check(p.returncode == 2 and "npz: " in p.stderr, "truncated: %d %s" % (p.returncode,
                                                                          p.stderr))
    p = d.punch("alice", "data", "push", os.path.join(d.tmp, "missing.npz"))
    check(p.returncode == 9, "missing file: %d %s" % (p.returncode, p.stderr))
    for name in ("mine.npz", "other"):
        p = d.punch("alice", "data", "rm", name)
        check(p.returncode == 0 and "deleted" in p.stdout, p.stdout + p.stderr)
    p = d.punch("alice", "data", "list")
    check("mine.npz" not in p.stdout, p.stdout)


if __name__ == "__main__":
    punchtest.main(cases)
