"A tiny Diffusers UNet2DModel (from a config, no hub) with a DDPMScheduler, trained on 8x8 digits by tb.fit."
import numpy as np
import pytest
import torch

pytest.importorskip("diffusers")
from diffusers import DDPMScheduler, UNet2DModel
from sklearn.datasets import load_digits

import trainbook as tb


class NoisePrediction(torch.nn.Module):
    "The DDPM objective as a module `fit` can train: noise a clean batch at random timesteps, predict the noise."
    def __init__(self, unet, scheduler):
        super().__init__()
        self.unet, self.scheduler = unet, scheduler

    def forward(self, x0):
        noise = torch.randn_like(x0)  # torch's RNG: seeded by fit, stored in its checkpoints
        t = torch.randint(0, self.scheduler.config.num_train_timesteps, (len(x0),), device=x0.device)
        pred = self.unet(self.scheduler.add_noise(x0, noise, t), t).sample
        return {"loss": torch.nn.functional.mse_loss(pred, noise), "logits": pred}


def tiny_unet():
    return UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1, block_out_channels=(8, 16),
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"),
                       norm_num_groups=4)


def test_ddpm_noise_prediction_loss_falls_under_fit_and_samples_come_out():
    images = torch.tensor(load_digits().images[:640], dtype=torch.float32)[:, None] / 8 - 1  # in [-1, 1]
    torch.manual_seed(0)
    model = NoisePrediction(tiny_unet(), DDPMScheduler(num_train_timesteps=100))
    dl = tb.TensorLoader(images, torch.zeros(len(images)), batch_size=32, shuffle=True)
    cfg = tb.TrainConfig(epochs=3, lr=3e-3, schedule="warmup_cosine", warmup=0.1, log_every=5)
    run = tb.fit(model, dl, None, loss_fn=None, config=cfg, live=False)
    assert run.stopped == "completed" and run.step == 60
    loss = run.records.series("loss").to_numpy()
    # the noise-prediction loss starts near 1 (an untrained net predicts ~0 for unit-variance noise)
    assert loss[:5].mean() > 0.6 and loss[-10:].mean() < 0.75 * loss[:10].mean()
    assert ("train", "grad_norm") in run.records.names()
    # sampling: the reverse DDPM chain with the trained UNet gives finite images of the right shape
    sched = model.scheduler
    sched.set_timesteps(20)
    x = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode(), tb.eval_mode(model.unet):
        for t in sched.timesteps: x = sched.step(model.unet(x, t).sample, t, x).prev_sample
    assert x.shape == (4, 1, 8, 8) and torch.isfinite(x).all()
