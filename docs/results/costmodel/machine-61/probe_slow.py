import pickle, numpy as np, collections, json
d=pickle.load(open("runs/s61/probe/ans.pkl","rb"))
y=d["yt"]; ts=d["ts"]; ns=d["ns"]; rows=d["rows_t"]
idx=np.where(y<0.3)[0]
print(len(idx), "programs", len({rows[i]["hash"] for i in idx}))
for i in idx[:40]:
    r=rows[i]
    print(f"y={y[i]:.3f} trees={np.exp(ts[i]):.3f} net={np.exp(ns[i]):.3f} base_ms={float(r['baseline_seconds'])*1e3:.1f} ", " ".join(f"{t['kind'][:5]}{t.get('level','')}" for t in r["schedule"]))
