/* datasets.h — the files of uploaded datasets: where a user's uploads live
 * under the data directory, which names are allowed, and the format check
 * an upload passes before it replaces anything.
 *
 * Layout: DATA_DIR/uploads/OWNERDIR/NAME, OWNERDIR the hex SHA-256 of the
 * owner's identity (any identity gives a safe, fixed-length directory
 * name, and one user's directory cannot be named by another). A job spec
 * names an upload "@NAME"; submit resolves that to "@" + the file's
 * absolute path (datasets_ref), which is what the engine reads and what
 * the store matches to tell whether a job uses the dataset. */
#ifndef PUNCH_DATASETS_H
#define PUNCH_DATASETS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "store/store.h"

/* Is name [A-Za-z0-9._-]{1,64}, not starting with a dot? (Dot names are
 * the upload's temporary files.) false with *why. */
bool datasets_name_ok(const char *name, const char **why);

/* DATA_DIR/uploads/OWNERDIR into buf; false if it does not fit. */
bool datasets_owner_dir(const char *data_dir, const char *owner, char *buf, size_t len);
/* The file of (owner, name); false if it does not fit. */
bool datasets_path(const char *data_dir, const char *owner, const char *name, char *buf,
                   size_t len);
/* The text a stored spec holds for the upload, with its JSON quotes:
 * "\"@PATH\"" (what store_dataset_put/delete match). */
bool datasets_ref(const char *data_dir, const char *owner, const char *name, char *buf,
                  size_t len);
/* An upload named as one file of an IDX pair (STEM-images-idx3-ubyte[.gz],
 * STEM-labels-idx1-ubyte[.gz], or the ".idx3-ubyte" style): its STEM into
 * stem. A job under data.format "idx" names the pair "@STEM" (or either
 * file's name); its spec then holds "@" + the owner's directory + "/STEM",
 * which the engine resolves to the pair as it does an admin's dataset. */
bool datasets_idx_stem(const char *name, char *stem, size_t len);
/* What a stored spec holds when a job uses upload `name` (datasets_ref;
 * the pair's stem for an IDX file): what replace and delete check. */
bool datasets_use_ref(const char *data_dir, const char *owner, const char *name, char *buf,
                      size_t len);

/* What the format check found. */
typedef struct datasets_info {
    char format[16];     /* npz, safetensors, idx, cifar10, csv, ctf, text */
    long long records;   /* samples (ctf: sequences); -1 for tensor files and
                            text, whose windows data.block_size decides */
    json_t *shapes;      /* owned: member or part -> shape array */
} datasets_info;

/* Check the upload open at fd (read with pread; never loaded whole) and
 * describe it. The format is recognised from its content: npz (a ZIP of
 * .npy members; pairs x_train/y_train, x_test/y_test, x_val/y_val, x/y must
 * agree in rows; any number dtype, x [N, features...] or a sequence [N, T]
 * / [N, T, F] with len_* [N] if present), safetensors, IDX (gzipped or
 * not), CIFAR-10 binary batches, and text files (gzipped or not): CSV
 * (numbers, an optional header line), CTF ("[SEQID] |name values" lines;
 * the records are the sequences) or plain UTF-8 text (a corpus for
 * data.format "text"), told apart by their first lines. 0, or -1 with a
 * message naming the format and
 * what is wrong ("npz: member x_train: truncated", "npz: x_train has 12000
 * rows but y_train 11999"). */
int datasets_check(int fd, datasets_info *info, char *err, size_t errlen);
/* An upload named NAME.onnx: checked by the ONNX importer (format "onnx",
 * shapes {"input": [...], "output": [outputs]}); the refusal names the node
 * and operator the engine cannot train. */
int datasets_check_model(int fd, datasets_info *info, char *err, size_t errlen);
void datasets_info_clear(datasets_info *info);

/* Resolve the "@NAME" references of a submitted spec's parsed tree
 * (data.train, .test, .validation) to owner's uploads, in place: each
 * "@NAME" replaced by "@PATH". 0, or -1 with *field and msg when one is not
 * an upload of owner ("you have no uploaded dataset ...": another user's
 * name is unknown, as it should be). Call after the spec validated. */
int datasets_resolve_spec(store *st, const char *data_dir, const char *owner, json_t *spec,
                          const char **field, char *msg, size_t msglen);

/* "model": "@NAME.onnx", an uploaded ONNX model of owner, resolved to
 * "@PATH" before the spec is parsed (parsing imports the graph): 0 when
 * the spec names none (*out NULL), 1 with the rewritten spec in *out
 * (heap), -1 with a message for the "model" field. */
int datasets_resolve_model(store *st, const char *data_dir, const char *owner,
                           const char *spec_text, size_t len, char **out, char *msg,
                           size_t msglen);

/* A model preset without model.input ("model": "mlp", or {"preset": ...}
 * without "input") on data.format npz with data.train an upload of owner:
 * the input is the upload's recorded sample shape (x_train's, else x's),
 * as the loaders know it for IDX and CIFAR-10. 0 when that does not apply
 * (*out NULL), 1 with the rewritten spec text in *out (heap), -1 when out
 * of memory. The user's own text stays what GET .../spec returns. */
int datasets_preset_input(store *st, const char *owner, const char *spec_text, size_t len,
                          char **out);

#endif
