import pickle, numpy as np
d=pickle.load(open("runs/s61/probe/ans.pkl","rb"))
y=d["yt"]; ts=d["ts"]; ns=d["ns"]
x=np.load("runs/s60/all.test.npy", mmap_mode="r")
load=np.array(x[:,7658]); xv=np.load("runs/s60/all.validation.npy", mmap_mode="r"); loadv=np.array(xv[:,7658])
m=lambda y,p: float(np.mean(np.abs(p-y)/y))
b=0.5*ts+0.5*ns
e=np.abs(np.exp(b)-y)/y
for th in [1e-6,1e-5,1e-4,1e-3,1e-2]:
    s=load>th
    print(f"load>{th:g}: rows {s.sum()} blend mape {e[s].mean() if s.any() else 0:.3f} share {e[s].sum()/e.sum():.3f} net {m(y[s],np.exp(ns[s])) if s.any() else 0:.3f} trees {m(y[s],np.exp(ts[s])) if s.any() else 0:.3f}")
    alt=np.where(s, ns, b); print("   use network there: overall", round(m(y,np.exp(alt)),4))
print("overall", m(y,np.exp(b)))
