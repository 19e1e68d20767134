# Inverse of pack.py: writes the Matrix Market file (values as shortest round-trip float64 text).
import sys, numpy as np, lzma, io
src, dst = sys.argv[1], sys.argv[2]
z = np.load(io.BytesIO(lzma.open(src).read()))
i = np.cumsum(z['di'].astype(np.int64)); j = np.cumsum(z['dj'].astype(np.int64))
with open(dst, 'w') as f:
    f.write(bytes(z['header']).decode() + '\n')
    if 'v' in z:
        v = z['v']
        f.write('\n'.join(f'{a} {b} {repr(float(c))}' for a, b, c in zip(i.tolist(), j.tolist(), v.tolist())))
    else:
        f.write('\n'.join(f'{a} {b}' for a, b in zip(i.tolist(), j.tolist())))
    f.write('\n')
