// The three examples of the MPI document (shared/seeds/001_*.txt), joined into one
// client, as a client writer would type them in. Two typos of the document are
// corrected because no compiler accepts them: the ';' missing after the
// MethodEnterObserver class, and the filter's parameter, named `methodInfo` while the
// body reads `data`. The rest is the document's text, plus the includes it assumes
// and one line that prints what the third example retrieves.
#include <MpiAPI.h>

#include <cstring>
#include <iostream>

using namespace std;

 using namespace Martini::MPI;

 // Define an event observer for the Method Enter event
 class MethodEnterObserver : public IMethodEnterEventObserver
 {
 public:

     // Specify the data items to be supplied with the event
     virtual BitSet EventDataTypes()
     {
         return DR_METHOD_ID | DR_THREAD_ID;
     }
 
     // Event handler
     virtual void HandleEvent(SMethodEnterEventData &data)
     {
         cout << "Method Enter event received. Method id = " 
              << data.methodId << " Thread id = " << data.threadId << endl;
     }
 };

 // Define a call-graph event filter
 class CallGraphFilter : public ICallGraphFilter
 {
     bool ShouldNotify(SCallGraphFilterData &data)
     {
         if (strcmp("Foo", data.szClassName) == 0 && data.methodAccessType == MAT_PACKAGE_API)
         {
             return true;
         }
         return false;
     }
 };

 IMpi *g_pMpiApi;

 class CNewMethodObserver : public INewMethodEventObserver
 {
 public:
     virtual void HandleEvent(SNewMethodEventData &data);
     TId m_clientId;
 };

 void CNewMethodObserver::HandleEvent(SNewMethodEventData &data)
 {
     char szName[1000];
     char szSig[1000];
     SMethodInfo methodInfo;
     methodInfo.szMethodName = szName;
     methodInfo.szMethodSig = szSig;
 
     TResult res = g_pMpiApi->GetMethodInfo(m_clientId, data.methodId, 
         DR_METHOD_NAME | DR_METHOD_SIGNATURE, &methodInfo);
     cout << "New method " << data.methodId << ": " << szName << szSig
          << " (" << ResultName(res) << ")" << endl;
 }

 // Event Observer instance
 MethodEnterObserver g_methodEnterObserver;
 
 // Event Filter instance
 CallGraphFilter g_callGraphFilter;

 CNewMethodObserver g_newMethodObserver;

 // MPI Client entry point
 extern "C" API_EXPORT 
 TResult MPICL_Instantiate(IMpi *pMpiApi, TId clientId, const char *szOptions)
 {
     g_pMpiApi = pMpiApi;
     g_newMethodObserver.m_clientId = clientId;
     pMpiApi->RegisterEvent(clientId, g_newMethodObserver);

     // Register for the Method Enter event
     pMpiApi->RegisterEvent(clientId, g_methodEnterObserver);

     // Set the call-graph filter
     pMpiApi->SetEventGroupFilter(clientId, EG_CALL_GRAPH, g_callGraphFilter);

     return MRTE_RESULT_OK;
 }
