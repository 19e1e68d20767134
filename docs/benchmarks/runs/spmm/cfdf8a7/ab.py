import json,math,sys
a=json.load(open(sys.argv[1]))['rows']
b=json.load(open(sys.argv[2]))['rows']
key=lambda r:(r['matrix'],r['n'])
B={key(r):r for r in b}
common=[(r,B[key(r)]) for r in a if key(r) in B]
print(f"cases: vector atomics {len(a)}, scalar {len(b)}, both {len(common)}\n")
print("| matrix | n | vector atomics us | speedup | pick | scalar atomics us | speedup | pick | cuSPARSE us (vector run / scalar run) | ours vector / scalar |")
print("|---|---:|---:|---:|---|---:|---:|---|---|---:|")
ls=[];lc=[]
for ra,rb in common:
    ls.append(math.log(ra['speedup']/rb['speedup'])); lc.append(math.log(ra['cusparse_us']/rb['cusparse_us']))
    print(f"| {ra['matrix']} | {ra['n']} | {ra['ours_us']:.1f} | {ra['speedup']:.2f} | `{ra['ours_variant']}` | {rb['ours_us']:.1f} | {rb['speedup']:.2f} | `{rb['ours_variant']}` | {ra['cusparse_us']:.1f} / {rb['cusparse_us']:.1f} | {rb['ours_us']/ra['ours_us']:.2f}x |")
g=lambda l: math.exp(sum(l)/len(l))
print(f"\ngeomean over the {len(common)} common cases: speedup over cuSPARSE {g([math.log(r['speedup']) for r,_ in common]):.3f}x with vector atomics, {g([math.log(r['speedup']) for _,r in common]):.3f}x with scalar ones (ratio {g(ls):.3f}); cuSPARSE's time ratio between the runs {g(lc):.3f}")
print(f"below 1.0: {sum(r['speedup']<1 for r,_ in common)} with vector atomics, {sum(r['speedup']<1 for _,r in common)} with scalar ones")
