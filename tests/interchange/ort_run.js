// ort_run.js — run an ONNX model in ONNX Runtime (npm onnxruntime-node) on
// one input: node ort_run.js MODEL INPUT.bin DIMS_JSON OUTPUT.bin [int64].
// The input is raw little-endian float32 (int64 token ids with the fifth
// argument) of shape DIMS_JSON; the first
// output is written the same way, its shape on stdout as JSON.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
    const [model, input, dims, output, type] = process.argv.slice(2);
    const session = await ort.InferenceSession.create(model);
    const buf = fs.readFileSync(input);
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
    const data = type === 'int64' ? new BigInt64Array(ab) : new Float32Array(ab);
    const feeds = {};
    feeds[session.inputNames[0]] = new ort.Tensor(type === 'int64' ? 'int64' : 'float32', data,
                                                  JSON.parse(dims));
    const results = await session.run(feeds);
    const out = results[session.outputNames[0]];
    fs.writeFileSync(output, Buffer.from(out.data.buffer, out.data.byteOffset,
                                         out.data.byteLength));
    console.log(JSON.stringify({name: session.outputNames[0], dims: out.dims}));
}

main().catch((e) => {
    console.error('ort_run: ' + e.message);
    process.exit(1);
});
