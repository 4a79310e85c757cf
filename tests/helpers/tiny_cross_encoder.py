"""A tiny, randomly initialised BERT cross-encoder saved to a folder (no download needed)."""

from __future__ import annotations

from pathlib import Path

WORDS = """[PAD] [UNK] [CLS] [SEP] [MASK] def class return self import from
parse config token tokens store save load user session cache index query search
chunk chunks file files path read write open close error value name list dict
how what where does the a of to in is are and or for with not by on""".split()


def build_tiny_cross_encoder(folder: Path, seed: int = 7) -> Path:
    """BertForSequenceClassification (hidden 32, 2 layers, 2 heads, 1 label) + BertTokenizer."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
                        num_labels=1, initializer_range=0.5)
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(str(vocab)).save_pretrained(folder)
    return folder


def direct_logits(folder: Path, pairs: list[tuple[str, str]], max_length: int) -> list[float]:
    """The model's raw outputs computed with plain transformers, one pair at a time."""
    import torch
    from transformers import BertForSequenceClassification, BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(folder)
    model = BertForSequenceClassification.from_pretrained(folder).eval()
    logits = []
    with torch.no_grad():
        for query, text in pairs:
            encoded = tokenizer(query, text, truncation=True, max_length=max_length, return_tensors="pt")
            logits.append(float(model(**encoded).logits[0, 0]))
    return logits
