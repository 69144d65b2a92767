# do the dominant computation's own vectors (transformed, untransformed, difference) help the trees?
import sys, json, numpy as np, pickle, argparse, subprocess
sys.path[:0]=[".","docs/results/costmodel/machine-60"]
import trees as T
import lightgbm as lgb
from llmopt.poly.costmodel.features import work_shares
D=subprocess.check_output(["bash","-c","source docs/results/costmodel/fcaa_recipe.sh && folder_at 3f5a413"],text=True).strip()
args=argparse.Namespace(data=D,cache="runs/s59/base-s0/features.pkl",matrices="runs/s60/all",plain=False,all_training_rows=True)
parts=T.load_parts(args)
keep=[k for k in range(7666) if k!=7657 and not 7660<=k<7666]
def extra(t):
    w=work_shares(t.anchor.comps); order=np.argsort(-w); d=order[0]
    e=[t.comps[d], t.anchor.comps[d], t.comps[d]-t.anchor.comps[d], [w[d], (w[order[1]] if len(w)>1 else 0.0)]]
    return np.concatenate(e).astype(np.float32)
xs=[np.hstack([p.x[:,keep], np.stack([extra(t) for t in p.trees])]) for p in parts]
np.save("runs/s61/dom.train.npy",xs[0]); np.save("runs/s61/dom.validation.npy",xs[1]); np.save("runs/s61/dom.test.npy",xs[2])
y=[p.y for p in parts]
mape=lambda y,p: float(np.mean(np.abs(p-y)/y))
ds=lgb.Dataset(xs[0],np.log(y[0]),weight=1/y[0])
params=dict(objective="l1",learning_rate=0.03,num_leaves=255,min_data_in_leaf=40,bagging_fraction=0.8,bagging_freq=1,feature_fraction=0.3,lambda_l2=1.0,num_threads=1,verbose=-1,seed=0)
b=lgb.train(params,ds,400)
pv,pt=b.predict(xs[1]),b.predict(xs[2])
d=pickle.load(open("runs/s61/probe/ans.pkl","rb"))
print(json.dumps({"validation":mape(y[1],np.exp(pv)),"test":mape(y[2],np.exp(pt)),"equal_blend_ens4":mape(y[2],np.exp(0.5*pt+0.5*d["ns"]))}))
np.savez("runs/s61/probe/dominant.npz",v=pv,t=pt)
