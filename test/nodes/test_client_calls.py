"""SimClient.call over real DDS: a request that gets no answer (as one the server never saw: SimClient.call
says when that happened) is sent again every `resend` seconds when the caller says a second call is
harmless, and without `resend` the call waits out its timeout and names the service."""
import pytest
from std_srvs.srv import Trigger

from binpick_sim.nodes.clients.client import SimClient
from binpick_sim.nodes.common.long_requests import Deferred, serve_deferred


@pytest.fixture
def caller(ros_context):
    """A client whose own node serves `lossy`: the first request is never answered, the later ones are
    (SimClient's waits spin this node, so the server runs while the client waits)."""
    client = SimClient("lossy_caller", context=ros_context, topics={})
    client.requests = 0

    def serve(request, response):
        client.requests += 1
        if client.requests == 1:
            return Deferred()  # never answered: as a request that never reached the server
        response.success, response.message = True, f"request {client.requests}"
        return response

    serve_deferred(client.node.create_service(Trigger, "lossy", serve), print)
    yield client
    client.close()


def test_a_request_left_unanswered_is_sent_again_after_resend_seconds(caller):
    answer = caller.call("lossy", timeout=20, resend=0.5)
    assert answer.success and answer.message == "request 2" and caller.requests == 2


def test_without_resend_an_unanswered_request_waits_out_the_timeout_naming_the_service(caller):
    with pytest.raises(TimeoutError, match="waited 2 s for an answer from lossy"):
        caller.call("lossy", timeout=2.0)
    assert caller.requests == 1
