"""Two small workspaces beside the sample one, for questions over several workspaces: a Python one and a
JavaScript one, each with one way to save a note."""

from __future__ import annotations

from pathlib import Path

QUESTION = "save a note"


def small_workspaces(root: Path) -> tuple[Path, Path]:
    """(python_workspace, javascript_workspace) under `root`, created if missing."""
    backend, frontend = root / "backend", root / "frontend"
    for folder in (backend, frontend):
        folder.mkdir(parents=True, exist_ok=True)
    (backend / "store.py").write_text(
        "def save_note(note, path):\n    '''Save a note to disk.'''\n    with open(path, 'w') as f:\n"
        "        f.write(note)\n")
    (frontend / "notes.js").write_text(
        "function saveNote(note) {\n  // write the note to local storage\n  localStorage.setItem('note', note);\n}\n")
    return backend, frontend


UNRELATED_QUESTION = "save a note to disk"


def unrelated_workspace(root: Path) -> Path:
    """A small shop (cart, orders, prices) under `root`: nothing about notes, but two of its functions ("save
    cart", "write invoice pdf") pass the relevance threshold for UNRELATED_QUESTION by chance words."""
    shop = root / "shop"
    shop.mkdir(parents=True, exist_ok=True)
    functions = {"cart.py": ["add_item(cart, item, quantity)", "remove_item(cart, item)", "cart_total(cart)",
                             "save_cart(cart, db)"],
                 "orders.py": ["place_order(cart, customer)", "cancel_order(order)", "send_confirmation_email(order)",
                               "write_invoice_pdf(order, path)"],
                 "pricing.py": ["apply_discount(total, code)", "shipping_cost(weight, country)", "tax_for(total, region)"]}
    for name, signatures in functions.items():
        (shop / name).write_text("\n\n".join(
            f"def {s}:\n    '''{s.split('(')[0].replace('_', ' ').capitalize()}.'''\n    return None\n" for s in signatures))
    return shop
