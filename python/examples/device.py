"""The `neuron` device: a model moved with .to("neuron") trains in eager mode and compiled,
with its memory, host transfers and simulated time.

    python python/examples/device.py
"""

import torch

import neuronsim  # noqa: F401 - registers the neuron device


def main() -> None:
    device = torch.accelerator.current_accelerator()  # neuron
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256), torch.nn.Linear(256, 10)
    )  # fmt: skip
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    xd, yd = x.to(device), y.to(device)
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    start.record()
    for step in range(3):  # eager mode: each op is a cached one-op program on the simulator
        loss = torch.nn.functional.cross_entropy(model(xd), yd)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"eager step {step}: loss {loss.item():.4f}")
    end.record()
    print(f"simulated time of 3 eager steps: {start.elapsed_time(end):.3f} ms")

    compiled = torch.compile(model, backend="neuron", dynamic=False)
    for step in range(2):  # compiled: one program per graph, tensors stay on the device
        loss = torch.nn.functional.cross_entropy(compiled(xd), yd)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"compiled step {step}: loss {loss.item():.4f}")

    stats = torch.neuron.memory_stats()
    print(f"device memory: {torch.neuron.memory_allocated() / 1024:.0f} KiB allocated, "
          f"peak {torch.neuron.max_memory_allocated() / 1024:.0f} KiB, "
          f"capacity {stats['capacity_bytes'] / 2**30:.0f} GiB")
    print(f"host->device: {stats['host_to_device_count']} copies, "
          f"{stats['host_to_device_bytes'] / 1024:.0f} KiB, "
          f"{stats['host_to_device_ns'] / 1e3:.1f} us; "
          f"device->host: {stats['device_to_host_count']} copies")
    print(f"device clock: {torch.neuron.simulated_time_ns() / 1e3:.1f} us simulated")
    print(f"ops that ran on the CPU: {neuronsim.get_fallback_ops() or 'none'}")


if __name__ == "__main__":
    main()
