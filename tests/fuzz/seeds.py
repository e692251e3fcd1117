#!/usr/bin/python3
"""tests/fuzz/seeds.py: writes the seed inputs of every fuzz target into
corpus/TARGET/seed-*: small valid (and a few nearly valid) inputs in each
target's framing (see each fuzz_TARGET.c), from which libFuzzer mutates.
Run it from anywhere to regenerate them; crash regressions (crash-*) are
kept by hand and never touched here. Needs python3-numpy (npz seeds)."""
import gzip
import io
import json
import os
import struct
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def write(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, mtime=0)


def split(first, second):
    """fuzz_data_split's framing: u16 LE length of the first file."""
    return struct.pack('<H', len(first)) + first + second


def jobspec():
    for f in sorted(os.listdir(os.path.join(ROOT, 'etc', 'jobs'))):
        with open(os.path.join(ROOT, 'etc', 'jobs', f), 'rb') as fp:
            write('jobspec', f, fp.read())
    write('jobspec', 'preset.json', json.dumps({
        'model': 'mlp', 'data': {'format': 'synthetic', 'num_classes': 4},
        'training': {'epochs': 1, 'optimizer': {'name': 'sgd', 'momentum': 0.9,
                                                'nesterov': True}}}))
    write('jobspec', 'bad-epochs.json', '{"model": "mlp", "training": {"epochs": -3}}')


QUICK_JOB = json.dumps({
    'name': 'quick', 'model': {'input': [8], 'layers': [
        {'type': 'dense', 'units': 4, 'activation': 'softmax'}]},
    'data': {'format': 'synthetic', 'synthetic_train': 256, 'synthetic_test': 64,
             'num_classes': 4},
    'training': {'epochs': 2, 'batch_size': 32, 'seed': 1}})


def http():
    auth = 'Authorization: Bearer alice-secret\n'
    reqs = {
        'submit': 'POST /api/v1/jobs\n' + auth + 'Content-Type: application/json\n\n' + QUICK_JOB,
        'healthz': 'GET /healthz\n\n',
        'metrics': 'GET /metrics\n\n',
        'list': 'GET /api/v1/jobs?state=queued\n' + auth + '\n',
        'get': 'GET /api/v1/jobs/{id}\n' + auth + '\n',
        'history': 'GET /api/v1/jobs/{id}/history\n' + auth + '\n',
        'weights': 'GET /api/v1/jobs/{id}/weights?format=npz\n' + auth + '\n',
        'logs': 'GET /api/v1/jobs/{id}/logs?offset=10&secret=alice-secret\n\n',
        'events': 'GET /api/v1/jobs/{id}/events\n' + auth + '\n',
        'cancel': 'DELETE /api/v1/jobs/{id}\n' + auth + '\n',
        'other-user': 'GET /api/v1/jobs/{id}\nAuthorization: Bearer bob-secret\n\n',
        'cluster': 'GET /api/v1/cluster\nauthorization: Bearer root-secret\n\n',
        'seed-submit': 'POST /api/submit\n\n' + json.dumps({'secret': 'bob-secret',
                                                             'job': json.loads(QUICK_JOB)}),
        'seed-state': 'GET /api/state\n' + auth + '\n',
        'seed-cancel': 'POST /api/cancel\n' + auth + '\n',
        'seed-destroy': 'GET /api/destroy\n' + auth + '\n',
        'method': 'PATCH /api/v1/jobs\n' + auth + '\n',
        'escaped': 'GET /api/v1/jobs/%2e%2e%2fx?state=%72unning\n' + auth + '\n',
    }
    # Numbered: replay runs them in name order, the submit first.
    for i, (name, text) in enumerate(reqs.items()):
        write('http', '%02d-%s' % (i, name), text)


def secrets():
    write('secrets', 'plain.json', json.dumps([
        {'secret': 'alice-secret', 'identity': 'alice'},
        {'secret': 'root-secret', 'identity': 'root', 'role': 'admin'}]))
    write('secrets', 'hashed.json', json.dumps([
        {'secret_sha256': 'ab' * 32, 'identity': 'bob@example.org', 'role': 'user'}]))
    write('secrets', 'duplicate.json', json.dumps([
        {'secret': 's', 'identity': 'a'}, {'secret': 's', 'identity': 'b'}]))


def idx_files(n, rows, cols):
    images = struct.pack('>IIII', 0x803, n, rows, cols) + bytes(
        (i * 37) & 0xff for i in range(n * rows * cols))
    labels = struct.pack('>II', 0x801, n) + bytes(i % 10 for i in range(n))
    return images, labels


def idx():
    images, labels = idx_files(3, 2, 2)
    write('idx', 'plain', b'\x00\x02' + split(images, labels))
    write('idx', 'gzip', b'\x01\x01' + split(gz(images), gz(labels)))
    write('idx', 'truncated', b'\x00\x01' + split(images[:-3], labels))


def cifar10():
    rec = lambda label: bytes([label]) + bytes((label * 7 + i) & 0xff for i in range(3072))
    write('cifar10', 'two-batches', b'\x00\x02' + split(rec(1) + rec(9), rec(3)))
    write('cifar10', 'gzip', b'\x01\x01' + split(gz(rec(0)), gz(rec(5))))
    write('cifar10', 'short', b'\x00\x01' + split(rec(2)[:100], b''))


def csv():
    write('csv', 'plain', b'\x08\x00\x02' + b'1,0.5,2\n0,3,4\n2,-1,1e3\n')
    write('csv', 'header-crlf', b'\x0d\x01\x01' + b'a,label,b\r\n1,0,2\r\n\r\n3,1,4\r\n')
    write('csv', 'gzip', b'\x00\x00\x01' + gz(b'0,1,2\n1,3,4\n'))
    write('csv', 'not-a-number', b'\x08\x00\x01' + b'1,abc\n')


def npz():
    buf = io.BytesIO()
    np.savez(buf, w=np.arange(6, dtype='<f4').reshape(2, 3), b=np.float32(2.5))
    write('npz', 'stored', buf.getvalue())
    buf = io.BytesIO()
    np.savez_compressed(buf, big=np.linspace(0, 1, 40, dtype='>f4').reshape(2, 2, 10))
    write('npz', 'deflated', buf.getvalue())


def safetensors():
    data = struct.pack('<6f', *range(6)) + struct.pack('<f', 2.5)
    header = json.dumps({
        'w': {'dtype': 'F32', 'shape': [2, 3], 'data_offsets': [0, 24]},
        'b': {'dtype': 'F32', 'shape': [], 'data_offsets': [24, 28]},
        '__metadata__': {'format': 'pt'}}).encode()
    header += b' ' * (-len(header) % 8)
    write('safetensors', 'two', struct.pack('<Q', len(header)) + header + data)
    header = b'{"x": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}'
    write('safetensors', 'f16', struct.pack('<Q', len(header)) + header + b'\x00\x3c')


def client():
    job = {'id': 'a1b2c3d4e5f6', 'name': 'fmnist-mlp', 'owner': 'alice', 'state': 'running',
           'queue_position': None, 'priority': 0, 'ranks': 2, 'trainer': 'allreduce',
           'workers': 2, 'gpus': 0, 'hosts': [{'host': 'localhost', 'ranks': 2}],
           'time_limit_s': 3600, 'submitted_at': 1.7e9 - 120, 'started_at': 1.7e9 - 60,
           'finished_at': None, 'exit_code': None, 'error': None, 'cancel_requested': False,
           'progress': {'epoch': 2, 'epochs': 5, 'step': 422, 'steps': 844, 'loss': 0.5,
                        'accuracy': 0.81, 'samples_per_s': 21000.0, 'elapsed_s': 7.1,
                        'eta_s': 12.3},
           'result': None}
    write('client', 'running', b'\x50' + json.dumps(job).encode())
    done = dict(job, state='succeeded', finished_at=1.7e9, exit_code=0,
                result={'test_loss': 0.36, 'test_accuracy': 0.8712})
    queued = dict(job, state='queued', queue_position=3, progress={}, started_at=None)
    failed = dict(job, state='failed', error='data: cannot open fashion-mnist/x')
    write('client', 'list', b'\x28' + json.dumps({'jobs': [done, queued, failed]}).encode())
    write('client', 'history', b'\x05' + json.dumps({
        'loss': [0.52, 0.41, None], 'accuracy': [0.81, 0.85, 0.9], 'val_loss': [0.44, 0.40, 0.3],
        'val_accuracy': [0.84, 0.86, 0.87], 'lr': [0.001, 0.0005, 0.0001],
        'epoch_time_s': [2.5, 2.25, 2.0], 'test': {'loss': 0.4},
        'workers': [{'rank': 0, 'loss': [1, 2]}]}).encode())
    write('client', 'error', b'\x00{"error": "no job x", "field": null}')


def onnx_models():
    # Written with onnx.helper when python3-onnx is there (the import's
    # framing is the bare file): an MLP, a CNN, a refused operator.
    try:
        import onnx
        from onnx import helper as h, numpy_helper as nh, TensorProto as T
    except ImportError:
        return

    def model(nodes, inits, shape):
        g = h.make_graph(nodes, 'g', [h.make_tensor_value_info('x', T.FLOAT, ['N'] + shape)],
                         [h.make_tensor_value_info('y', T.FLOAT, ['N', 3])],
                         [nh.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
        m = h.make_model(g, opset_imports=[h.make_opsetid('', 13)])
        m.ir_version = 8
        return m.SerializeToString()
    write('onnx', 'mlp', model([h.make_node('Gemm', ['x', 'w', 'b'], ['h'], transB=1),
                                h.make_node('Relu', ['h'], ['r']),
                                h.make_node('MatMul', ['r', 'w2'], ['m']),
                                h.make_node('Add', ['m', 'b2'], ['z']),
                                h.make_node('Softmax', ['z'], ['y'], axis=1)],
                               {'w': np.ones((4, 2)), 'b': np.zeros(4), 'w2': np.ones((4, 3)),
                                'b2': np.zeros(3)}, [2]))
    write('onnx', 'cnn', model([h.make_node('Conv', ['x', 'w'], ['c'], pads=[1, 1, 1, 1]),
                                h.make_node('BatchNormalization', ['c', 'g', 'b', 'm', 'v'],
                                            ['n']),
                                h.make_node('MaxPool', ['n'], ['p'], kernel_shape=[2, 2],
                                            strides=[2, 2]),
                                h.make_node('GlobalAveragePool', ['p'], ['a']),
                                h.make_node('Flatten', ['a'], ['f']),
                                h.make_node('Gemm', ['f', 'fw'], ['y'])],
                               {'w': np.ones((2, 1, 3, 3)), 'g': np.ones(2), 'b': np.zeros(2),
                                'm': np.zeros(2), 'v': np.ones(2), 'fw': np.ones((2, 3))},
                               [1, 4, 4]))
    write('onnx', 'refused', model([h.make_node('CumSum', ['x', 'a'], ['y'])],
                                   {'a': np.zeros(1)}, [3]))


for make in (jobspec, http, secrets, idx, cifar10, csv, npz, safetensors, client, onnx_models):
    make()
