"""What crosses a connection between a real cluster's processes: the frames (:mod:`.frame`:
length-prefixed, versioned, authenticated by a MAC, with size and depth limits) and the cluster
secret that keys the MAC (:mod:`.auth`).

Why a room of its own, below the store and the processes: the store server and its clients
(``impl/store/remote.py``) speak the same frames as the brokers and controllers, so the frames
cannot live with the processes; they carry the cores' messages, so they import the cores and
nothing else of impl (``tests/test_layering.py``).
"""
