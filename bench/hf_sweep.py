"""HuggingFace transformers architectures through the neuron backend, compared with eager.

Each architecture is built from a tiny config of its own family (random weights, fp32, eval
mode), run forward in eager and through torch.compile(backend="neuron", dynamic=False), and its
main output (logits or last hidden state) compared: max |compiled - eager| / max |eager| must be
<= 1e-4. Inductor, on the same models, is the reference of what "compiles" means.

    python bench/hf_sweep.py                   # all -> bench/results/hf_architectures.{md,csv}
    python bench/hf_sweep.py --only bert --only gpt2 --no-write
    python bench/hf_sweep.py --inductor        # also Inductor

Each model is classified:
  pass          compiled with no op on the CPU and matched eager
  fallback      compiled, but Dynamo broke the graph around code it cannot trace (listed)
  unsupported   NeuronCompileError listing unsupported operators
  compile       another compile error (first line kept)
  mismatch      outputs differ from eager beyond the tolerance
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

# The benchmarks measure one physical NeuronCore (trn2 unless --target says otherwise) and
# compare outputs where eager puts them: NeuronSim's placement, not TorchNeuron's defaults of
# a two-core logical device and device-resident outputs (README, The neuron device).
os.environ.setdefault("NEURON_LOGICAL_NC_CONFIG", "1")
os.environ.setdefault("TORCH_NEURONX_RETAIN_DEVICE_MODE", "1")

import torch

TOLERANCE = 1e-4
HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Arch:
    name: str
    family: str
    build: Callable[[], tuple[torch.nn.Module, dict]]


def _ids(vocab: int = 99, batch: int = 2, length: int = 8) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, length))


def _text(config_cls: str, model_cls: str, family: str, **config) -> Callable:
    def build():
        import transformers

        cfg = getattr(transformers, config_cls)(**config)
        model = getattr(transformers, model_cls)(cfg)
        ids = _ids(cfg.vocab_size)
        return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    return build


SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             vocab_size=99, max_position_embeddings=64)  # fmt: skip
DECODER = dict(SMALL, num_key_value_heads=2)


def _seq2seq(config_cls: str, model_cls: str, **config) -> Callable:
    def build():
        import transformers

        cfg = getattr(transformers, config_cls)(**config)
        model = getattr(transformers, model_cls)(cfg)
        ids = _ids(cfg.vocab_size)
        return model, {"input_ids": ids, "decoder_input_ids": ids[:, :5]}

    return build


def _vision(config_cls: str, model_cls: str, size: int = 32, channels: int = 3,
            reinit: bool = False, **config):
    """reinit: random weights everywhere (the family's init zeroes layers whose output would
    then be all zeros, which compares nothing)."""

    def build():
        import transformers

        cfg = getattr(transformers, config_cls)(**config)
        model = getattr(transformers, model_cls)(cfg)
        if reinit:
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.normal_(0.0, 0.2)
        return model, {"pixel_values": torch.randn(2, channels, size, size)}

    return build


def _speech(config_cls: str, model_cls: str, key: str, shape: tuple, **config):
    def build():
        import transformers

        cfg = getattr(transformers, config_cls)(**config)
        model = getattr(transformers, model_cls)(cfg)
        return model, {key: torch.randn(*shape)}

    return build


ENC = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
           vocab_size=99, max_position_embeddings=64)  # fmt: skip
BART = dict(vocab_size=99, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
            eos_token_id=2, decoder_start_token_id=0)  # fmt: skip

ARCHS = [
    # encoders
    Arch("bert", "encoder", _text("BertConfig", "BertModel", "encoder", **ENC)),
    Arch("roberta", "encoder", _text("RobertaConfig", "RobertaModel", "encoder", **ENC)),
    Arch("distilbert", "encoder", _text("DistilBertConfig", "DistilBertModel", "encoder",
                                        dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                        vocab_size=99, max_position_embeddings=64)),
    Arch("albert", "encoder", _text("AlbertConfig", "AlbertModel", "encoder", embedding_size=16,
                                    **ENC)),
    Arch("electra", "encoder", _text("ElectraConfig", "ElectraModel", "encoder",
                                     embedding_size=16, **ENC)),
    Arch("deberta_v2", "encoder", _text("DebertaV2Config", "DebertaV2Model", "encoder", **ENC)),
    # decoders
    Arch("gpt2", "decoder", _text("GPT2Config", "GPT2LMHeadModel", "decoder", n_embd=32,
                                  n_layer=2, n_head=4, vocab_size=99, n_positions=64)),
    Arch("gpt_neox", "decoder", _text("GPTNeoXConfig", "GPTNeoXForCausalLM", "decoder", **ENC)),
    Arch("gptj", "decoder", _text("GPTJConfig", "GPTJForCausalLM", "decoder", n_embd=32,
                                  n_layer=2, n_head=4, vocab_size=99, n_positions=64,
                                  rotary_dim=4)),
    Arch("bloom", "decoder", _text("BloomConfig", "BloomForCausalLM", "decoder", hidden_size=32,
                                   n_layer=2, n_head=4, vocab_size=99)),
    Arch("opt", "decoder", _text("OPTConfig", "OPTForCausalLM", "decoder", hidden_size=32,
                                 num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                                 vocab_size=99, max_position_embeddings=64,
                                 word_embed_proj_dim=32)),
    Arch("llama", "decoder", _text("LlamaConfig", "LlamaForCausalLM", "decoder", **DECODER)),
    Arch("mistral", "decoder", _text("MistralConfig", "MistralForCausalLM", "decoder",
                                     **DECODER)),
    Arch("qwen2", "decoder", _text("Qwen2Config", "Qwen2ForCausalLM", "decoder", **DECODER)),
    Arch("phi", "decoder", _text("PhiConfig", "PhiForCausalLM", "decoder", **DECODER)),
    Arch("falcon", "decoder", _text("FalconConfig", "FalconForCausalLM", "decoder",
                                    hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    vocab_size=99)),
    # mixture of experts
    Arch("mixtral", "moe", _text("MixtralConfig", "MixtralForCausalLM", "moe",
                                 num_local_experts=4, num_experts_per_tok=2, **DECODER)),
    Arch("qwen2_moe", "moe", _text("Qwen2MoeConfig", "Qwen2MoeForCausalLM", "moe",
                                   num_experts=4, num_experts_per_tok=2,
                                   moe_intermediate_size=32, shared_expert_intermediate_size=32,
                                   **DECODER)),
    # encoder-decoder
    Arch("bart", "encoder-decoder", _seq2seq("BartConfig", "BartModel", **BART)),
    Arch("t5", "encoder-decoder", _seq2seq("T5Config", "T5Model", vocab_size=99, d_model=32,
                                           d_kv=8, d_ff=64, num_layers=2, num_heads=4)),
    Arch("marian", "encoder-decoder", _seq2seq("MarianConfig", "MarianModel", **BART)),
    # vision
    Arch("vit", "vision", _vision("ViTConfig", "ViTModel", image_size=32, patch_size=8, **ENC)),
    Arch("swin", "vision", _vision("SwinConfig", "SwinModel", image_size=32, patch_size=4,
                                   embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                                   window_size=4)),
    Arch("convnext", "vision", _vision("ConvNextConfig", "ConvNextModel", num_channels=3,
                                       num_stages=2, hidden_sizes=[16, 32],
                                       depths=[1, 1], out_features=["stage2"])),
    Arch("resnet", "vision", _vision("ResNetConfig", "ResNetModel", hidden_sizes=[16, 32],
                                     depths=[1, 1], embedding_size=16)),
    Arch("mobilevit", "vision", _vision("MobileViTConfig", "MobileViTModel", size=64, reinit=True,
                                        image_size=64, hidden_sizes=[16, 24, 32],
                                        neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 48])),
    Arch("segformer", "vision", _vision("SegformerConfig", "SegformerModel", size=64,
                                        hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1],
                                        num_attention_heads=[1, 1, 2, 2],
                                        decoder_hidden_size=32)),
    # speech
    Arch("wav2vec2", "speech", _speech("Wav2Vec2Config", "Wav2Vec2Model", "input_values",
                                       (2, 1600), hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=4, intermediate_size=64,
                                       conv_dim=(16, 16), conv_stride=(5, 4),
                                       conv_kernel=(10, 4), num_conv_pos_embeddings=16,
                                       num_conv_pos_embedding_groups=4)),
    Arch("whisper_encoder", "speech", _speech("WhisperConfig", "WhisperModel", "input_features",
                                              (2, 16, 32), d_model=32, encoder_layers=2,
                                              decoder_layers=2, encoder_attention_heads=4,
                                              decoder_attention_heads=4, encoder_ffn_dim=64,
                                              decoder_ffn_dim=64, num_mel_bins=16,
                                              max_source_positions=16, vocab_size=99,
                                              pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                              decoder_start_token_id=0)),
]


def _main_output(out) -> torch.Tensor:
    for key in ("logits", "last_hidden_state"):
        value = getattr(out, key, None)
        if isinstance(value, torch.Tensor):
            return value
    if isinstance(out, (tuple, list)):
        return out[0]
    return out


def _inputs_for(name: str, model, kwargs: dict) -> dict:
    if name == "whisper_encoder":  # the encoder only: the Whisper case
        return {"encoder": model.get_encoder(), **kwargs}
    return kwargs


def run_one(arch: Arch, backend: str) -> tuple[str, str]:
    import neuronsim

    torch.manual_seed(0)
    model, kwargs = arch.build()
    model = model.eval()
    if arch.name == "whisper_encoder":
        model = model.get_encoder()
    with torch.no_grad():
        expected = _main_output(model(**kwargs))
        torch._dynamo.reset()
        breaks: list[str] = []
        compiled = torch.compile(model, backend=backend, dynamic=False)
        try:
            actual = _main_output(compiled(**kwargs))
        except neuronsim.NeuronCompileError as error:
            text = str(error)
            kind = "unsupported" if text.startswith("unsupported operators") else "compile"
            listed = [line for line in text.splitlines()[1:] if line.startswith("  ")]
            detail = " ".join(sorted({line.strip().split(" at ")[0] for line in listed}))
            return kind, detail or text.splitlines()[0][:300]
        except Exception as error:  # noqa: BLE001 - a sweep classifies every failure
            text = f"{type(error).__name__}: {error}".splitlines()
            return "compile", (text[0] if text else "")[:300]
    if backend == "neuron" and neuronsim.get_fallback_ops():
        return "fallback", " ".join(sorted(neuronsim.get_fallback_ops()))
    del breaks
    error = float((actual.float() - expected.float()).abs().max() / expected.float().abs().max())
    if not error <= TOLERANCE:
        return "mismatch", f"relative error {error:.3g}"
    return "pass", f"relative error {error:.2g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append")
    parser.add_argument("--inductor", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    import neuronsim  # noqa: F401 - registers the backend

    archs = [a for a in ARCHS if not args.only or a.name in args.only]
    backends = ["neuron"] + (["inductor"] if args.inductor else [])
    rows = []
    start = time.time()
    for arch in archs:
        row = {"model": arch.name, "family": arch.family}
        for backend in backends:
            try:
                result, detail = run_one(arch, backend)
            except Exception:  # noqa: BLE001 - building the model itself failed
                result, detail = "eager error", traceback.format_exc().splitlines()[-1][:300]
            row[f"{backend} result"], row[f"{backend} detail"] = result, detail
            print(f"[hf] {arch.name}: {backend} {result} {detail[:160]}", flush=True)
        rows.append(row)
    elapsed = time.time() - start
    summary = {b: sum(r[f"{b} result"] == "pass" for r in rows) for b in backends}
    print(f"[hf] pass: {summary} of {len(rows)} in {elapsed:.0f} s")
    if args.no_write or args.only:
        return 0
    import transformers

    import neuronsim

    out = os.path.join(HERE, "results", "hf_architectures")
    with open(out + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(out + ".md", "w") as f:
        f.write("# HuggingFace architectures (tiny configs, fp32, forward)\n\n")
        f.write(f"Produced by: `python bench/hf_sweep.py{' --inductor' if args.inductor else ''}`"
                f" in {elapsed:.0f} s; torch {torch.__version__}, transformers "
                f"{transformers.__version__}, neuronsim {neuronsim.__version__}. Date: "
                f"{datetime.date.today()}.\n\n```\n{__doc__.strip()}\n```\n\n")
        f.write("| backend | models | pass |\n|---|---|---|\n")
        for b in backends:
            f.write(f"| {b} | {len(rows)} | {summary[b]} |\n")
        f.write("\n| model | family | " + " | ".join(backends) + " |\n")
        f.write("|---|---|" + "---|" * len(backends) + "\n")
        for r in rows:
            cells = [f"{r[f'{b} result']}: {r[f'{b} detail']}".replace("|", "/") for b in backends]
            f.write(f"| {r['model']} | {r['family']} | " + " | ".join(cells) + " |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
